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

/// The one place that says which status changes are legal.
///
/// `PaymentStore` asks this type before every write (its statements bind only a `CheckedTransition`, set-based ones
/// included) and then guards the same change in SQL (`UPDATE … WHERE status = $expected`), so a redelivered or racing
/// message can never move a payment backwards or sideways.
public enum PaymentStateMachine {
    /// The status a payment is created in.
    public static let initialStatus = PaymentStatus.received

    /// Raised when code asks for a change the state machine forbids; that is a bug, never bad input.
    public struct IllegalTransition: Error, Equatable, CustomStringConvertible {
        public let from: PaymentStatus
        public let to: PaymentStatus
        public var description: String { "illegal payment transition \(from.rawValue) → \(to.rawValue)" }
    }

    /// Statuses reachable in one step from `status`.
    public static func successors(of status: PaymentStatus) -> Set<PaymentStatus> {
        switch status {
        case .received: [.decrypted, .failed]
        case .decrypted: [.prepared, .awaitingAmount, .failed]
        // Completed (the amount given: back to authorize), or its credential expired.
        case .awaitingAmount: [.decrypted, .failed]
        case .prepared: [.submitting, .declined, .failed, .needsReview]
        case .submitting: [.prepared, .authorized, .declined, .failed, .needsReview]
        // An operator closes a review by hand (`paypipe payment resolve`).
        case .needsReview: [.authorized, .declined, .failed]
        // The gateway authorised a payment PayPipe had failed (a late answer): a person must act.
        case .failed: [.needsReview]
        case .authorized, .declined: []
        }
    }

    public static func canTransition(from: PaymentStatus, to: PaymentStatus) -> Bool {
        successors(of: from).contains(to)
    }

    public static func validate(from: PaymentStatus, to: PaymentStatus) throws(IllegalTransition) {
        guard canTransition(from: from, to: to) else { throw IllegalTransition(from: from, to: to) }
    }
}
