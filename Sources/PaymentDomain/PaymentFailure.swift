import Foundation

/// A permanent failure attributable to one payment: the payment ends `failed` with `code`, and the
/// failure is notified to the merchant like any other terminal result.
public struct PaymentFailure: Sendable, Equatable {
    public let paymentId: UUID
    /// Stable, machine-readable code (e.g. `signature_invalid`, `amount_mismatch`).
    public let code: String
    /// Human-readable reason. Must never contain card data or key material.
    public let reason: String

    public init(paymentId: UUID, code: String, reason: String) {
        self.paymentId = paymentId
        self.code = code
        self.reason = reason
    }
}
