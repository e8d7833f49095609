import Foundation

/// Fault-injection points for tests of crash safety and for the benchmark guard's self-test. Production workers use
/// ``none``.
///
/// `afterCommit` (debug builds only: a test seam release workers do not carry) runs after a batch's database
/// transaction committed and before its hand-offs are published; throwing from it makes the lane abandon the batch
/// exactly as a crash at that point would (nothing published, nothing acked), so tests can prove the hand-off still
/// reaches the next stage.
/// `afterBatch` runs once a batch is acked, with the seconds the lane spent on it.
public struct RuntimeHooks: Sendable {
    #if DEBUG
    public var afterCommit: @Sendable () throws -> Void
    #endif
    public var afterBatch: @Sendable (_ seconds: Double) -> Void

    #if DEBUG
    public init(
        afterCommit: @escaping @Sendable () throws -> Void = {},
        afterBatch: @escaping @Sendable (_ seconds: Double) -> Void = { _ in }
    ) {
        self.afterCommit = afterCommit
        self.afterBatch = afterBatch
    }
    #else
    public init(afterBatch: @escaping @Sendable (_ seconds: Double) -> Void = { _ in }) {
        self.afterBatch = afterBatch
    }
    #endif

    public static let none = RuntimeHooks()

    /// The variable `scripts/bench --inject-slowdown e2e` sets to prove its guard catches a slower pipeline.
    public static let benchSlowdownVariable = "PAYPIPE_BENCH_SLOWDOWN"

    /// What a worker runs with. Debug builds only (the benchmark guard in CI measures the debug build): with
    /// `PAYPIPE_BENCH_SLOWDOWN=F` (F > 1) every lane keeps its CPU busy for (F − 1) times each batch's time, so every
    /// stage costs about F times as much. Release builds carry no such switch.
    public static func forWorker(environment: EnvironmentReader) -> RuntimeHooks {
        #if DEBUG
        guard let text = environment.raw(benchSlowdownVariable), let factor = Double(text), factor > 1 else { return .none }
        return RuntimeHooks(afterBatch: { seconds in busy(for: seconds * (factor - 1)) })
        #else
        return .none
        #endif
    }

    /// Spins (rather than sleeps): a slowdown that left the CPU idle would hand it to the other stages.
    private static func busy(for seconds: Double) {
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9)
        var spin: UInt64 = 0
        while DispatchTime.now().uptimeNanoseconds < end { spin &+= 1 }
        _ = spin
    }
}
