import Dispatch
import Foundation
import HTTP
import Synchronization
import Testing
@testable import WorkerRuntime

/// The call-out phase's one gate (circuit, concurrency slots, rate, `Retry-After`) and its send-window check, tested
/// once for every stage that calls out: the rules on ``EndpointGateState`` with a hand-moved clock, the waiting on
/// ``EndpointGate``. No services.
@Suite struct EndpointGateTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    let start = Self.start

    func at(_ seconds: Double) -> Date { start.addingTimeInterval(seconds) }

    typealias Call = EndpointGateState.Call

    /// Admits `call`, failing the test when it is not let through; returns whether it is the half-open trial.
    func admit(_ state: inout EndpointGateState, _ call: Call, at now: Date, ticket: Int = 0,
               sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        guard case .admitted(let probe) = state.enter(call, ticket: ticket, at: now) else {
            Issue.record("not admitted", sourceLocation: sourceLocation)
            return false
        }
        return probe
    }

    /// `times` calls to `call`'s endpoint that fail, at the start.
    func fail(_ state: inout EndpointGateState, _ call: Call, times: Int) {
        for _ in 0..<times {
            _ = admit(&state, call, at: start)
            _ = state.leave(call, probe: false, report: .failed(pause: nil), at: start)
        }
    }

    // MARK: Circuit

    @Test func opensAfterConsecutiveFailuresPerEndpoint() {
        var state = EndpointGateState(policy: EndpointGatePolicy(maxConcurrent: 8, failureThreshold: 3, openSeconds: 10))
        let call = Call(endpoint: "https://gw.example/jwt/")
        fail(&state, call, times: 2)
        #expect(state.permits(call.endpoint, at: start), "below the threshold")
        _ = admit(&state, call, at: start)
        _ = state.leave(call, probe: false, report: .failed(pause: nil), at: start)
        #expect(!state.permits(call.endpoint, at: at(9.9)))
        #expect(state.enter(call, ticket: 1, at: at(9.9)) == .refused(.circuitOpen))
        #expect(state.permits("https://other.example/jwt/", at: start), "circuits are per endpoint")
        #expect(state.trippedCircuits == 1)
    }

    @Test func aHealthyAnswerBetweenFailuresKeepsItClosed() {
        var state = EndpointGateState(policy: EndpointGatePolicy(failureThreshold: 2))
        let call = Call(endpoint: "u")
        for report in [CircuitState.Report.failed(pause: nil), .healthy, .failed(pause: nil)] {
            _ = admit(&state, call, at: start)
            _ = state.leave(call, probe: false, report: report, at: start)
        }
        #expect(state.permits("u", at: start))
    }

    /// The one half-open rule, for gateway and webhook calls alike: one trial at a time; its success closes, its
    /// failure re-opens at once, a silent trial (not sent after all) lets the next trial through.
    @Test func halfOpenLetsOneTrialThrough() {
        var state = EndpointGateState(policy: EndpointGatePolicy(maxConcurrent: 8, failureThreshold: 2, openSeconds: 10))
        let call = Call(endpoint: "https://a.example:443")
        fail(&state, call, times: 2)
        #expect(state.permits(call.endpoint, at: at(10)), "half-open: a trial may start")
        #expect(admit(&state, call, at: at(10)), "the first call is the trial")
        #expect(!state.permits(call.endpoint, at: at(10)), "planning sees the trial taken")
        #expect(state.enter(call, ticket: 1, at: at(10)) == .refused(.circuitOpen), "only one trial at a time")
        _ = state.leave(call, probe: true, report: .failed(pause: nil), at: at(11))
        #expect(!state.permits(call.endpoint, at: at(20.9)), "a failed trial re-opens at once for the open period")
        #expect(admit(&state, call, at: at(21)))
        _ = state.leave(call, probe: true, report: .silent, at: at(21))
        #expect(state.permits(call.endpoint, at: at(21)), "a silent trial decides nothing")
        #expect(admit(&state, call, at: at(21)))
        _ = state.leave(call, probe: true, report: .healthy, at: at(22))
        #expect(state.trippedCircuits == 0)
        // Closed again with a fresh count: one failure does not re-open it.
        #expect(!admit(&state, call, at: at(22)))
        #expect(!admit(&state, call, at: at(22), ticket: 2), "closed: no trial, calls run concurrently")
        _ = state.leave(call, probe: false, report: .failed(pause: nil), at: at(22))
        #expect(state.permits(call.endpoint, at: at(22)))
    }

    /// A 429/503 with `Retry-After` pauses the endpoint at once for that long, capped at the policy's maximum.
    @Test func retryAfterPausesTheEndpoint() {
        var state = EndpointGateState(policy: EndpointGatePolicy(failureThreshold: 5, openSeconds: 10, maxPauseSeconds: 60))
        let call = Call(endpoint: "https://a.example:443")
        _ = admit(&state, call, at: start)
        _ = state.leave(call, probe: false, report: .failed(pause: 30), at: start)
        #expect(!state.permits(call.endpoint, at: at(29)))
        #expect(admit(&state, call, at: at(31)), "after the pause: half-open")
        _ = state.leave(call, probe: true, report: .failed(pause: 3600), at: at(31))
        #expect(!state.permits(call.endpoint, at: at(90)))
        #expect(state.permits(call.endpoint, at: at(91)), "capped at maxPauseSeconds")
    }

    // MARK: Concurrency slots

    /// Slots belong to the owner (a merchant), the circuit to the endpoint: merchants sharing the gateway's URL do not
    /// take each other's slots, and waiters are served first come first served.
    @Test func slotsPerOwnerWithAFirstComeFirstServedQueue() {
        var state = EndpointGateState(policy: EndpointGatePolicy(maxConcurrent: 2))
        let a = Call(endpoint: "https://gw.example/", owner: "merchant-a")
        let b = Call(endpoint: "https://gw.example/", owner: "merchant-b")
        _ = admit(&state, a, at: start)
        _ = admit(&state, a, at: start)
        #expect(state.enter(a, ticket: 7, at: start) == .queued)
        #expect(state.enter(a, ticket: 8, at: start) == .queued)
        _ = admit(&state, b, at: start)
        #expect(state.inFlight("merchant-a") == 2)
        #expect(state.leave(a, probe: false, report: .healthy, at: start) == 7, "the slot goes to the first waiter")
        #expect(state.inFlight("merchant-a") == 2, "handed over, not freed")
        #expect(state.admitHanded(a, at: start) == (.admitted(probe: false), nil))
        #expect(state.cancel(a, ticket: 8) == true, "a waiter whose time is up leaves the queue")
        #expect(state.leave(a, probe: false, report: .healthy, at: start) == nil)
        #expect(state.leave(a, probe: false, report: .healthy, at: start) == nil)
        #expect(state.inFlight("merchant-a") == 0)
        #expect(state.cancel(a, ticket: 8) == false, "not queued any more")
    }

    /// A waiter handed a slot after the circuit opened is refused and hands the slot on; a waiter handed a slot at the
    /// moment its time ran out keeps it (``EndpointGateState/cancel(_:ticket:)`` says so).
    @Test func aHandedSlotIsJudgedByTheCircuitAgain() {
        var state = EndpointGateState(policy: EndpointGatePolicy(maxConcurrent: 1, failureThreshold: 1, openSeconds: 10))
        let call = Call(endpoint: "e")
        _ = admit(&state, call, at: start)
        #expect(state.enter(call, ticket: 1, at: start) == .queued)
        #expect(state.enter(call, ticket: 2, at: start) == .queued)
        #expect(state.leave(call, probe: false, report: .failed(pause: nil), at: start) == 1)
        #expect(state.cancel(call, ticket: 1) == false, "already handed a slot")
        #expect(state.admitHanded(call, at: start) == (.refused(.circuitOpen), 2), "refused, the slot goes on to ticket 2")
        #expect(state.admitHanded(call, at: start) == (.refused(.circuitOpen), nil))
        #expect(state.inFlight("e") == 0)
    }

    // MARK: Rate

    @Test func rateLimitsEachEndpointWithoutCountingAsAFailure() {
        var state = EndpointGateState(policy: EndpointGatePolicy(failureThreshold: 1))
        #expect(state.book("a", rate: 1, maxWait: 0, at: start) == .after(0))
        #expect(state.book("a", rate: 1, maxWait: 0, at: start) == .refused(.rateLimited))
        #expect(state.book("a", rate: 1, maxWait: 2, at: start) == .after(1), "booked for when it is due")
        #expect(state.book("b", rate: 1, maxWait: 0, at: start) == .after(0), "buckets are per endpoint")
        #expect(state.permits("a", at: start), "a breaker that opens on the first failure did not trip")
        #expect(state.book("a", rate: 1, maxWait: 0, at: at(2)) == .after(0))
    }

    @Test func anOpenCircuitRefusesBeforeBooking() {
        var state = EndpointGateState(policy: EndpointGatePolicy(failureThreshold: 1, openSeconds: 10))
        let call = Call(endpoint: "a")
        _ = admit(&state, call, at: start)
        _ = state.leave(call, probe: false, report: .failed(pause: nil), at: start)
        #expect(state.book("a", rate: 1, maxWait: 0, at: start) == .refused(.circuitOpen))
    }

    // MARK: Bounded state

    /// Endpoints come from publishers (`notify_url`): the state stays bounded however many there are, and a clean
    /// record is not kept at all.
    @Test func stateIsBounded() {
        var state = EndpointGateState(policy: EndpointGatePolicy(failureThreshold: 2, openSeconds: 10, maxEndpoints: 50))
        for index in 0..<1_000 {
            let call = Call(endpoint: "https://e\(index).example:443")
            _ = admit(&state, call, at: start)
            _ = state.leave(call, probe: false, report: index % 2 == 0 ? .healthy : .failed(pause: nil), at: start)
            _ = state.book(call.endpoint, rate: 1, maxWait: 0, at: start)
            #expect(state.trackedKeys <= 50)
        }
        var clean = EndpointGateState(policy: EndpointGatePolicy(maxEndpoints: 50))
        for index in 0..<100 {
            let call = Call(endpoint: "https://c\(index).example:443")
            _ = admit(&clean, call, at: start)
            _ = clean.leave(call, probe: false, report: .healthy, at: start)
        }
        #expect(clean.trackedKeys == 0)
    }

    // MARK: The gate (lock and waiting)

    /// A call that finds no slot sleeps until a release hands it one: woken by the release, not by its timeout.
    @Test func aWaitingCallTakesTheSlotAReleaseHandsOver() async throws {
        let gate = EndpointGate(policy: EndpointGatePolicy(maxConcurrent: 1), stage: .submit)
        let call = Call(endpoint: "gw", owner: "a")
        guard case .acquired(let held) = gate.acquire(call, timeout: 0) else { throw GateTestError.notAcquired }
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { gate.release(held, report: .healthy) }
        // A wait that times out is refused (aWaitWithoutAReleaseEndsAtItsTimeout), so `.acquired` within a timeout no
        // loaded machine reaches proves the release woke it; no clock is read.
        let acquired = await Task.detached { gate.acquire(call, timeout: 600) }.value
        guard case .acquired(let permit) = acquired else { throw GateTestError.notAcquired }
        #expect(gate.inFlight("a") == 1)
        gate.release(permit, report: .healthy)
        #expect(gate.inFlight("a") == 0)
    }

    @Test func aWaitWithoutAReleaseEndsAtItsTimeout() throws {
        let gate = EndpointGate(policy: EndpointGatePolicy(maxConcurrent: 1, maxWait: 0.1), stage: .notify)
        let call = Call(endpoint: "e")
        guard case .acquired(let held) = gate.acquire(call) else { throw GateTestError.notAcquired }
        let started = Date()
        #expect(gate.acquire(call) == .refused(.busy))
        #expect(Date().timeIntervalSince(started) >= 0.1)
        #expect(gate.acquire(Call(endpoint: "other")) != .refused(.busy), "another owner is not starved")
        gate.release(held, report: .healthy)
        #expect(gate.inFlight("e") == 0, "the timed-out waiter left no slot taken")
    }

    /// More threads than slots: never more than the limit in flight, and every call served in the end.
    @Test func concurrentCallsNeverExceedTheLimit() {
        let gate = EndpointGate(policy: EndpointGatePolicy(maxConcurrent: 1, maxWait: 30), stage: .submit)
        let counts = Mutex((inFlight: 0, peak: 0, served: 0))
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            guard case .acquired(let permit) = gate.acquire(Call(endpoint: "gw", owner: "m")) else { return }
            counts.withLock { $0.inFlight += 1; $0.peak = max($0.peak, $0.inFlight) }
            usleep(2_000)
            counts.withLock { $0.inFlight -= 1; $0.served += 1 }
            gate.release(permit, report: .healthy)
        }
        let final = counts.withLock { $0 }
        #expect(final.served == 16)
        #expect(final.peak == 1)
        #expect(gate.inFlight("m") == 0)
    }

    @Test func theGaugeCountsCircuitsNotClosed() throws {
        let clock = Mutex(Self.start)
        let registry = MetricsRegistry()
        let gate = EndpointGate(policy: EndpointGatePolicy(failureThreshold: 2, openSeconds: 10), stage: .submit,
                                clock: { clock.withLock { $0 } })
        gate.attach(metrics: registry)
        let labels = ["stage": "submit"]
        #expect(registry.render().contains("paypipe_circuits_open{stage=\"submit\"} 0"), "exported before any failure")
        func call(_ endpoint: String, _ report: CircuitState.Report) throws {
            guard case .acquired(let permit) = gate.acquire(Call(endpoint: endpoint), timeout: 0) else { throw GateTestError.notAcquired }
            gate.release(permit, report: report)
        }
        try call("https://a.example/", .failed(pause: nil))
        #expect(registry.value(CircuitMetrics.open, labels: labels) == 0)
        try call("https://a.example/", .failed(pause: nil))
        try call("https://b.example/", .failed(pause: nil))
        try call("https://b.example/", .failed(pause: nil))
        #expect(registry.value(CircuitMetrics.open, labels: labels) == 2)
        #expect(!gate.permits("https://a.example/"))
        clock.withLock { $0.addTimeInterval(11) }
        try call("https://a.example/", .healthy)
        #expect(registry.value(CircuitMetrics.open, labels: labels) == 1)
    }

    // MARK: Send window

    /// The exactly-once check before a call's bytes leave: open up to its deadline (inclusive), refused after.
    @Test func theSendWindowRefusesOnlyAfterItsDeadline() {
        let begun = ContinuousClock.now
        let window = SendWindow(seconds: 5, from: begun, wallClock: start)
        #expect(window.expiresAt == at(5))
        #expect(window.refusal(at: begun) == nil)
        #expect(window.refusal(at: begun.advanced(by: .seconds(5))) == nil)
        #expect(window.refusal(at: begun.advanced(by: .milliseconds(5001)))?.hasPrefix("send window passed") == true)
        #expect(SendWindow(seconds: 0, from: begun.advanced(by: .seconds(-1)), wallClock: start).gate
                .check(HTTPConnectedPeer(ip: "203.0.113.7", port: 443)) != nil, "the gate libcurl runs applies the same check")
    }
}

enum GateTestError: Error { case notAcquired }
