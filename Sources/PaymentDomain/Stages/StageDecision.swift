import Foundation
// The failure dispositions the domain decides in (StageFailure), seen by everything that sees the domain.
@_exported import StageContract

/// What a stage's pure `decide` concludes for one message, besides the writes it asks for: the hand-off to publish,
/// or the failure the runtime routes (a dead letter, a retry).
public struct HandOff: Sendable, Equatable {
    public let stage: Stage
    public let message: StageMessage

    public init(_ stage: Stage, _ message: StageMessage) {
        (self.stage, self.message) = (stage, message)
    }
}

/// How a batch read found a merchant a message names.
public enum MerchantLookup<Merchant: Sendable>: Sendable {
    case found(Merchant)
    /// No merchant of that id was ever applied.
    case unknown
    /// It exists but cannot be used now (its key material does not load): the message's failure, as classified.
    case unavailable(StageFailure)
}

/// A permanent, payment-attributable failure a stage decides (the payment ends `failed` with `code`).
public struct Rejection: Error, Sendable, Equatable {
    public let code: String
    /// Human-readable; never card data or key material (it is stored and sent to the merchant).
    public let reason: String

    public init(code: String, reason: String) {
        (self.code, self.reason) = (code, reason)
    }
}

/// The rule every stage's `decide` follows for a payment met more than once in a batch: the first message that
/// writes decides, and each later one is "already handled": it gets the hand-off to wherever the first one's writes
/// leave the payment, and writes nothing. (Messages that write nothing decide alone: each sees the same rows.)
struct FirstDecides<Key: Hashable> {
    private var decided: [Key: HandOff] = [:]

    func earlier(_ key: Key) -> HandOff? { decided[key] }

    mutating func record(_ key: Key, _ handOff: HandOff) {
        decided[key] = handOff
    }
}

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
