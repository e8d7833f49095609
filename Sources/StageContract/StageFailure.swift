import Foundation

/// How a message failed, which decides what the runtime does with it. This enum and the runtime's
/// `FailureClassifier` are the single place where failure handling is decided.
///
/// A module of its own, below both sides: the payment domain decides in these terms (a pure module, it cannot see the
/// runtime's IO) and the runtime routes on them (it cannot see the payment domain).
public enum StageFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Bad input attributable to the message's subject (a payment): the stage records it (the payment ends `failed`
    /// and is notified), else the runtime dead-letters the message; either way it is acked.
    case permanent(PermanentFailure)
    /// Cannot be tied to a payment (unparsable, oversized, unknown merchant, job id reused with other
    /// content): a copy goes to the stage's dead-letter queue with the code and reason, then it is acked.
    case unattributable(code: String, reason: String)
    /// May succeed later (gateway 5xx, serialization conflict that outlived its retries): delayed retry
    /// through the stage's retry tiers; dead-lettered as `retries_exhausted` when they run out.
    case transient(code: String, reason: String)
    /// Not now, and the moment it may succeed is known (an uncertain AUTH's `reconcile_after`, an operation attempt's):
    /// re-driven at `until` (an instant on the runtime's clock) through the retry tiers, not on their fixed delays, and
    /// not counted as a retry (RetrySchedule, docs/scaling.md).
    case waiting(code: String, reason: String, until: Date)
    /// The database cannot be reached: the delivery is held and retried in place after reconnecting,
    /// so an outage neither burns retries nor loses messages.
    case databaseUnavailable(reason: String)

    public var code: String {
        switch self {
        case .permanent(let failure): failure.code
        case .unattributable(let code, _), .transient(let code, _), .waiting(let code, _, _): code
        case .databaseUnavailable: "database_unavailable"
        }
    }

    public var reason: String {
        switch self {
        case .permanent(let failure): failure.reason
        case .unattributable(_, let reason), .transient(_, let reason), .waiting(_, let reason, _), .databaseUnavailable(let reason): reason
        }
    }

    public var description: String { "\(code): \(reason)" }

    /// A wait for `until` as read on the clock that decided it (the database's, which showed `decidedAt` then), on the
    /// runtime's clock (`now`): the same time still to wait, whatever the two clocks' offset.
    public static func waiting(code: String, reason: String, until: Date, decidedAt: Date, now: Date = Date()) -> StageFailure {
        .waiting(code: code, reason: reason, until: now.addingTimeInterval(until.timeIntervalSince(decidedAt)))
    }
}

/// A permanent failure as the runtime carries it to the stage's record step: the stable code and reason it dead-letters
/// with when nothing records it, and the id of the record it is attributable to. The payment side builds it from its
/// `PaymentFailure` (whose `paymentId` is the subject) and back.
public struct PermanentFailure: Sendable, Equatable {
    /// What failed: the id the stage's record step marks failed.
    public let subject: UUID
    /// Stable, machine-readable code (e.g. `signature_invalid`, `amount_mismatch`).
    public let code: String
    /// Human-readable reason. Must never contain card data or key material.
    public let reason: String

    public init(subject: UUID, code: String, reason: String) {
        (self.subject, self.code, self.reason) = (subject, code, reason)
    }
}
