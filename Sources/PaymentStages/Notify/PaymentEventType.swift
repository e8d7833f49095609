import Pipeline

/// The event types sent to merchants, one per terminal payment status (American spelling, matching
/// `payments.status`). The raw value is both the Standard Webhooks `type` and the routing key on
/// `paypipe.results`, so consumers can bind to `payment.#` or to a single outcome.
public enum PaymentEventType: String, Sendable, CaseIterable, Codable {
    case authorized = "payment.authorized"
    case declined = "payment.declined"
    case failed = "payment.failed"
    case needsReview = "payment.needs_review"

    /// The event for a terminal status; `nil` for a status that is not terminal (nothing to notify yet).
    public init?(status: PaymentStatus) {
        switch status {
        case .authorized: self = .authorized
        case .declined: self = .declined
        case .failed: self = .failed
        case .needsReview: self = .needsReview
        case .received, .decrypted, .awaitingAmount, .prepared, .submitting: return nil
        }
    }
}
