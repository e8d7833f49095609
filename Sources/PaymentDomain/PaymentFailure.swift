import Foundation
// The failure dispositions the domain decides in (StageFailure), seen by everything that sees the domain.
@_exported import StageContract

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

extension PaymentFailure {
    /// The failure the runtime carried to the record step.
    public init(_ failure: PermanentFailure) {
        self.init(paymentId: failure.subject, code: failure.code, reason: failure.reason)
    }

    /// As the runtime carries it (`StageFailure.permanent`).
    public var permanent: PermanentFailure { PermanentFailure(subject: paymentId, code: code, reason: reason) }
}

extension StageFailure {
    /// A permanent failure of a payment: it ends `failed` with the failure's code and is notified.
    public static func permanent(_ failure: PaymentFailure) -> StageFailure { .permanent(failure.permanent) }
}
