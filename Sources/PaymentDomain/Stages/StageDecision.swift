import Foundation

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
