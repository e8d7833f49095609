/// Connection life-cycle notifications of `AMQPPublisher` / `AMQPConsumer`, for logs and health checks.
/// Delivered on the client's owner thread: handlers must return quickly and must not call back into
/// the client that emitted them.
public enum AMQPEvent: Sendable {
    /// A connection is up and the topology is declared (and, for consumers, consuming).
    case connected(generation: UInt64)
    /// The connection was lost, or a connect attempt failed (reason "connect attempt N failed: ...").
    /// `reason` is an `AMQPError` description (no secrets).
    case disconnected(reason: String)
    /// The next connect attempt happens after `delaySeconds`; `attempt` counts failures since the last success.
    case reconnectScheduled(attempt: Int, delaySeconds: Double)
}
