/// A payment's status. Spelled the American way, matching the event types sent to merchants
/// (`payment.authorized`, …) and the `payments.status` column, which has a CHECK on these values.
public enum PaymentStatus: String, Sendable, CaseIterable, Codable {
    /// The job was accepted and the payment row exists; the token is not yet decrypted.
    case received
    /// Card data is stored (encrypted); or, for gateway-decrypts merchants, the token is verified.
    case decrypted
    /// Decrypted, but the job had `amountPending` (a deferred payment): nothing is sent until a
    /// `payment.complete.requested` operation gives the amount, or the credential's lifetime ends (`prime_expired`).
    /// No queue carries it meanwhile (`payments.stage` `done`); the operations worker moves it on.
    case awaitingAmount = "awaiting_amount"
    /// The gateway request (claims) is built and stored; it may be sent.
    case prepared
    /// A gateway attempt was recorded as `sending`; its outcome is not yet known.
    case submitting
    case authorized
    case declined
    case failed
    /// The outcome could not be established automatically; an operator resolves it.
    case needsReview = "needs_review"

    /// Terminal statuses are final: nothing but notification happens after them.
    public var isTerminal: Bool {
        switch self {
        case .authorized, .declined, .failed, .needsReview: true
        case .received, .decrypted, .awaitingAmount, .prepared, .submitting: false
        }
    }

    /// The stage whose queue carries a payment in this status.
    public var stage: Stage {
        switch self {
        case .received: .decrypt
        case .decrypted: .authorize
        case .prepared, .submitting: .submit
        // Notify tells the merchant it waits (`payment.awaiting_amount`) and marks it done: then it waits in no
        // stage's queue until a `payment.complete.requested` operation moves it on.
        case .awaitingAmount: .notify
        case .authorized, .declined, .failed, .needsReview: .notify
        }
    }
}
