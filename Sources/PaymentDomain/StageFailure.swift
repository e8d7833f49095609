/// How a message failed, which decides what the runtime does with it. This enum and
/// ``FailureClassifier`` are the single place where failure handling is decided.
public enum StageFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Bad input attributable to a payment: the payment ends `failed`, is notified, the message is acked.
    case permanent(PaymentFailure)
    /// Cannot be tied to a payment (unparsable, oversized, unknown merchant, job id reused with other
    /// content): a copy goes to the stage's dead-letter queue with the code and reason, then it is acked.
    case unattributable(code: String, reason: String)
    /// May succeed later (gateway 5xx, serialization conflict that outlived its retries): delayed retry
    /// through the stage's retry tiers; dead-lettered as `retries_exhausted` when they run out.
    case transient(code: String, reason: String)
    /// The database cannot be reached: the delivery is held and retried in place after reconnecting,
    /// so an outage neither burns retries nor loses messages.
    case databaseUnavailable(reason: String)

    public var code: String {
        switch self {
        case .permanent(let failure): failure.code
        case .unattributable(let code, _), .transient(let code, _): code
        case .databaseUnavailable: "database_unavailable"
        }
    }

    public var reason: String {
        switch self {
        case .permanent(let failure): failure.reason
        case .unattributable(_, let reason), .transient(_, let reason), .databaseUnavailable(let reason): reason
        }
    }

    public var description: String { "\(code): \(reason)" }
}
