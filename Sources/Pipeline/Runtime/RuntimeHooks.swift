/// Fault-injection points for tests of crash safety. Production workers use ``none``.
///
/// `afterCommit` runs after a batch's database transaction committed and before its hand-offs are
/// published; throwing from it makes the lane abandon the batch exactly as a crash at that point would
/// (nothing published, nothing acked), so tests can prove the hand-off still reaches the next stage.
public struct RuntimeHooks: Sendable {
    public var afterCommit: @Sendable () throws -> Void

    public init(afterCommit: @escaping @Sendable () throws -> Void = {}) {
        self.afterCommit = afterCommit
    }

    public static let none = RuntimeHooks()
}
