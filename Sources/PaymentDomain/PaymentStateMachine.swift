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
