import Synchronization
import Testing
@testable import WorkerRuntime

/// `/livez` and `/readyz` decide on what the runtime observed, with the clock injected: no sleeping.
@Suite struct ProbesTests {
    final class TestClock: Sendable {
        private let now = Mutex(1_000.0)
        func advance(_ seconds: Double) { now.withLock { $0 += seconds } }
        var clock: Heartbeats.Clock { { [self] in now.withLock { $0 } } }
    }

    let policy = LivenessPolicy(stuckAfterSeconds: 300)

    @Test func aLaneThatKeepsBeatingStaysAliveHoweverLongTheWorkerRuns() {
        let clock = TestClock()
        let heartbeats = Heartbeats(clock: clock.clock)
        for _ in 0..<20 {
            heartbeats.beat("lane-0")
            heartbeats.beat("lane-1")
            clock.advance(60)
        }
        let report = policy.report(secondsSinceProgress: heartbeats.secondsSinceProgress())
        #expect(report.isHealthy)
        #expect(report.checks == ["lane-0": true, "lane-1": true])
        #expect(report.secondsSinceProgress == ["lane-0": 60, "lane-1": 60])
    }

    @Test func aLaneWithoutProgressBeyondTheThresholdFailsLivenessAndIsNamed() {
        let clock = TestClock()
        let heartbeats = Heartbeats(clock: clock.clock)
        heartbeats.beat("lane-0")
        heartbeats.beat("lane-1")
        clock.advance(300)
        heartbeats.beat("lane-1")
        #expect(policy.report(secondsSinceProgress: heartbeats.secondsSinceProgress()).isHealthy, "300 s is the boundary: still alive")
        clock.advance(0.5)
        let report = policy.report(secondsSinceProgress: heartbeats.secondsSinceProgress())
        #expect(!report.isHealthy)
        #expect(report.checks == ["lane-0": false, "lane-1": true])
        #expect(report.json == #"{"status":"unavailable","checks":{"lane-0":false,"lane-1":true},"secondsSinceProgress":{"lane-0":300.500,"lane-1":0.500}}"#)
        heartbeats.beat("lane-0")
        #expect(policy.report(secondsSinceProgress: heartbeats.secondsSinceProgress()).isHealthy, "progress again: alive again")
    }

    @Test func aFinishedLaneIsNoLongerWatched() {
        let clock = TestClock()
        let heartbeats = Heartbeats(clock: clock.clock)
        heartbeats.beat("lane-0")
        heartbeats.finished("lane-0")
        clock.advance(3_600)
        let report = policy.report(secondsSinceProgress: heartbeats.secondsSinceProgress())
        #expect(report.isHealthy && report.checks.isEmpty)
    }

    @Test func readinessNeedsTheConsumerThePublisherAndTheDatabaseAndNoStop() {
        let ready = Readiness(consumerAttached: true, publisherConnected: true, databaseReachable: true, stopping: false)
        #expect(ready.report.isHealthy)
        #expect(ready.report.json == #"{"status":"ok","checks":{"accepting":true,"consumer":true,"database":true,"publisher":true}}"#)
        for unready in [
            Readiness(consumerAttached: false, publisherConnected: true, databaseReachable: true, stopping: false),
            Readiness(consumerAttached: true, publisherConnected: false, databaseReachable: true, stopping: false),
            Readiness(consumerAttached: true, publisherConnected: true, databaseReachable: false, stopping: false),
            Readiness(consumerAttached: true, publisherConnected: true, databaseReachable: true, stopping: true),
        ] {
            #expect(!unready.report.isHealthy, "\(unready)")
        }
    }

    /// `/healthz` answers exactly as before: no progress object unless a report carries one.
    @Test func theHealthReportJSONIsUnchangedWithoutProgress() {
        #expect(HealthReport(checks: ["broker": true]).json == #"{"status":"ok","checks":{"broker":true}}"#)
    }

    @Test func theStuckThresholdIsAConfiguredDuration() throws {
        let base = ["PAYPIPE_ENV": "sandbox"]
        #expect(try WorkerConfiguration(defaultMetricsPort: 1, environment: EnvironmentReader(base)).laneStuckAfterSeconds == 300)
        let set = try WorkerConfiguration(defaultMetricsPort: 1, environment: EnvironmentReader(base.merging(["PAYPIPE_LANE_STUCK_AFTER": "90s"]) { $1 }))
        #expect(set.laneStuckAfterSeconds == 90)
        #expect(throws: ConfigurationError.self) {
            try WorkerConfiguration(defaultMetricsPort: 1, environment: EnvironmentReader(base.merging(["PAYPIPE_LANE_STUCK_AFTER": "soon"]) { $1 }))
        }
    }
}
