import Dispatch
import Foundation
import Pipeline
import Testing

extension Integration {
/// `/livez` and `/readyz` of a real worker over HTTP, as an orchestrator's probes call them (docs/operations.md "Probes").
@Suite struct ProbeTests {
    static func get(_ port: UInt16, _ path: String) throws -> (status: Int, body: String) {
        try HTTPProbe.get("http://127.0.0.1:\(port)\(path)")
    }

    /// A PostgreSQL outage makes the worker unready but never dead: an orchestrator must not restart it (it holds its
    /// batch and reconnects by itself). `/healthz` keeps its old meaning (503 while the database is down).
    @Test func livezStaysUpAndReadyzFollowsAPostgreSQLOutage() throws {
        let harness = try RuntimeHarness(extra: AlertedMetricsTests.reconciling)
        let payments = try harness.makePayments(10)
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        let port = try #require(runtime.observabilityPort)
        try TestServices.eventually("/readyz 200") { try Self.get(port, "/readyz").status == 200 }
        let live = try Self.get(port, "/livez")
        #expect(live.status == 200 && live.body.contains(#""lane-0":true"#) && live.body.contains(#""lane-1":true"#), "\(live.body)")

        defer { try? TestServices.services("start", "postgres") }
        try TestServices.services("stop", "postgres")
        try TestServices.eventually("/readyz 503 while PostgreSQL is stopped") { try Self.get(port, "/readyz").status == 503 }
        let unready = try Self.get(port, "/readyz")
        #expect(unready.body.contains(#""database":false"#) && unready.body.contains(#""consumer":true"#), "\(unready.body)")
        #expect(try Self.get(port, "/healthz").status == 503, "/healthz is unchanged: the database is one of its checks")
        #expect(try Self.get(port, "/livez").status == 200)
        // Work arriving during the outage is held by a lane that retries: still alive.
        try harness.publish(payments)
        try TestServices.eventually("a batch taken during the outage") {
            (try runtime.scrape().value("paypipe_messages_consumed_total", ["stage": "authorize"]) ?? 0) > 0
        }
        #expect(try Self.get(port, "/livez").status == 200)

        try TestServices.services("start", "postgres")
        try TestServices.eventually(timeout: 60, "/readyz 200 after PostgreSQL started") { try Self.get(port, "/readyz").status == 200 }
        try TestServices.eventually(timeout: 60, "the held batch handled") { try harness.statuses()["prepared"] == 10 }
        #expect(try Self.get(port, "/livez").status == 200)

        // A stopping worker detaches its consumer: unready at once, while still alive and draining.
        runtime.requestStop()
        try TestServices.eventually("/readyz 503 once stopping") {
            let ready = try Self.get(port, "/readyz")
            return ready.status == 503 && ready.body.contains(#""consumer":false"#) && ready.body.contains(#""accepting":false"#)
        }
    }

    /// A lane blocked inside a call for longer than `PAYPIPE_LANE_STUCK_AFTER` fails `/livez`, named; once it moves
    /// again, `/livez` recovers. `/readyz` does not look at lanes.
    @Test func aLaneBlockedBeyondTheThresholdFailsLivez() throws {
        let harness = try RuntimeHarness(extra: ["PAYPIPE_LANE_STUCK_AFTER": "1s", "PAYPIPE_CONCURRENCY": "1"])
        let hold = DispatchSemaphore(value: 0)
        harness.stage.controls.withLock { $0.hold = hold }
        let payments = try harness.makePayments(1)
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        let port = try #require(runtime.observabilityPort)
        try TestServices.eventually("/livez 200") { try Self.get(port, "/livez").status == 200 }
        try harness.publish(payments)
        try TestServices.eventually("/livez 503 naming the blocked lane") {
            let live = try Self.get(port, "/livez")
            return live.status == 503 && live.body.contains(#""lane-0":false"#)
        }
        #expect(try Self.get(port, "/readyz").status == 200)
        harness.stage.controls.withLock { $0.hold = nil }
        hold.signal()
        try TestServices.eventually("handled") { try harness.statuses()["prepared"] == 1 }
        try TestServices.eventually("/livez 200 once the lane moves again") { try Self.get(port, "/livez").status == 200 }
    }
}
}
