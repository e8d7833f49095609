/// The four stages a payment passes through, in pipeline order.
///
/// Each stage is consumed from its own durable quorum queue so it can be scaled on its own;
/// the names here are the single source of every queue, routing key and metric label.
public enum Stage: String, Sendable, CaseIterable, Codable, Comparable {
    case decrypt
    case authorize
    case submit
    case notify

    /// The stage's work queue, e.g. `paypipe.authorize`.
    public var queueName: String { "paypipe.\(rawValue)" }

    /// Where the runtime copies messages it cannot process (with `x-paypipe-error-code` headers).
    public var deadLetterQueueName: String { "paypipe.\(rawValue).dlq" }

    /// The stage that follows this one; `nil` after notification.
    public var next: Stage? {
        switch self {
        case .decrypt: .authorize
        case .authorize: .submit
        case .submit: .notify
        case .notify: nil
        }
    }

    public static func < (lhs: Stage, rhs: Stage) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
