import Pipeline

/// The event types sent to merchants about a payment's status: one per terminal status (American spelling, matching
/// `payments.status`), and `payment.awaiting_amount` when a deferred payment starts waiting for its amount (not an
/// outcome: its terminal event follows). The raw value is both the Standard Webhooks `type` and the routing key on
/// `paypipe.results`, so consumers can bind to `payment.#` or to a single outcome.
public enum PaymentEventType: String, Sendable, CaseIterable, Codable {
    case authorized = "payment.authorized"
    case declined = "payment.declined"
    case failed = "payment.failed"
    case needsReview = "payment.needs_review"
    /// A deferred payment (its job had `amountPending`) waits for a `payment.complete.requested` operation.
    case awaitingAmount = "payment.awaiting_amount"

    /// The event for a terminal status or `awaiting_amount`; `nil` for another status (nothing to notify yet).
    public init?(status: PaymentStatus) {
        switch status {
        case .authorized: self = .authorized
        case .declined: self = .declined
        case .failed: self = .failed
        case .needsReview: self = .needsReview
        case .awaitingAmount: self = .awaitingAmount
        case .received, .decrypted, .prepared, .submitting: return nil
        }
    }
}
