import Dispatch
import Synchronization

/// The last sign of progress of each of a worker's loops (its lanes), on a monotonic clock.
///
/// A lane beats at the top of every iteration (at least every 0.2 s when idle), on every retry while it holds a batch
/// through a database outage, and on every retry of a publish through a broker outage: an outage is waiting, not being
/// stuck. Only a lane blocked inside one call for longer than ``LivenessPolicy/stuckAfterSeconds`` stops beating.
public final class Heartbeats: Sendable {
    /// Seconds on a monotonic clock (injected by tests).
    public typealias Clock = @Sendable () -> Double
    private let clock: Clock
    private let beats = Mutex<[String: Double]>([:])

    public init(clock: @escaping Clock = Heartbeats.uptime) {
        self.clock = clock
    }

    /// Seconds since boot, never going back (`CLOCK_MONOTONIC`); a wall-clock step cannot make a lane look stuck.
    public static let uptime: Clock = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Records progress of `loop` now (registering it on its first beat).
    public func beat(_ loop: String) {
        let now = clock()
        beats.withLock { $0[loop] = now }
    }

    /// `loop` ended on purpose (a lane after a graceful stop): it is no longer watched.
    public func finished(_ loop: String) {
        _ = beats.withLock { $0.removeValue(forKey: loop) }
    }

    /// Seconds since each watched loop's last beat.
    public func secondsSinceProgress() -> [String: Double] {
        let now = clock()
        return beats.withLock { $0.mapValues { max(0, now - $0) } }
    }
}

/// `/livez`: the process answers and none of its loops has gone without progress for longer than `stuckAfterSeconds`
/// (`PAYPIPE_LANE_STUCK_AFTER`). Deliberately blind to the broker and the database: an outage of either must not make
/// an orchestrator restart every worker (they reconnect by themselves); that is `/readyz`'s business.
public struct LivenessPolicy: Sendable, Equatable {
    public var stuckAfterSeconds: Double

    public init(stuckAfterSeconds: Double) {
        self.stuckAfterSeconds = stuckAfterSeconds
    }

    /// A loop is alive while its last progress is at most `stuckAfterSeconds` old (the boundary is still alive).
    public func report(secondsSinceProgress: [String: Double]) -> HealthReport {
        HealthReport(
            checks: secondsSinceProgress.mapValues { $0 <= stuckAfterSeconds },
            secondsSinceProgress: secondsSinceProgress)
    }
}

/// `/readyz`: the worker can take work — its consumer is attached to its queue (connected and consuming), its
/// publisher's connection is up, the database answered the latest operation, and it is not stopping.
public struct Readiness: Sendable, Equatable {
    public var consumerAttached: Bool
    public var publisherConnected: Bool
    public var databaseReachable: Bool
    public var stopping: Bool

    public init(consumerAttached: Bool, publisherConnected: Bool, databaseReachable: Bool, stopping: Bool) {
        (self.consumerAttached, self.publisherConnected) = (consumerAttached, publisherConnected)
        (self.databaseReachable, self.stopping) = (databaseReachable, stopping)
    }

    public var report: HealthReport {
        HealthReport(checks: [
            "consumer": consumerAttached, "publisher": publisherConnected, "database": databaseReachable, "accepting": !stopping,
        ])
    }
}
