/// A stage as the runtime knows it: a name, from which its queues, its routing key on the stages exchange and the
/// `stage` label of its logs and metrics follow. The payment side names its stages (its `Stage` enum); the runtime
/// takes any.
public struct StageName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// The stage's work queue, e.g. `paypipe.authorize`.
    public var queueName: String { "paypipe.\(rawValue)" }

    /// Where the runtime copies messages it cannot process (with `x-paypipe-error-code` headers).
    public var deadLetterQueueName: String { "paypipe.\(rawValue).dlq" }

    public var description: String { rawValue }
}
