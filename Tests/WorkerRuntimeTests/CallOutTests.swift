import Dispatch
import Foundation
import HTTP
import Synchronization
import Testing
@testable import WorkerRuntime

/// The runtime's call-out phase (``CallOut/perform(_:window:gating:call:heldBack:)``), once for every stage that calls
/// out: a call is made only holding its gate slot and, when windowed, only within the round's send window; a call held
/// back is never made, gets the stage's held-back answer and tells the circuit nothing. The call itself is a pure
/// test double (it returns a value and counts); no services, no network.
@Suite struct CallOutTests {
    /// What the double answers: made (with the call's index) or held back (why).
    enum Answer: Sendable, Equatable {
        case made(Int)
        case heldBack(HeldBack)
    }

    static func callOut(maxConcurrent: Int = 4, maxWait: Double = 1, failureThreshold: Int = 1) -> CallOut {
        CallOut(
            pool: HTTPClientPool(size: 2, configuration: HTTPClientConfiguration(), name: "call-out-test"),
            gate: EndpointGate(policy: EndpointGatePolicy(maxConcurrent: maxConcurrent, failureThreshold: failureThreshold, maxWait: maxWait),
                               stage: .submit),
            sendWindow: 5)
    }

    /// A window whose deadline passed a second ago: a windowed call (an AUTH) is not made, and the answer says why;
    /// a call the window does not bound (a status query) is made. The held-back call gave its slot back and its
    /// report was silent: the circuit (threshold 1) stays closed.
    @Test func aWindowedCallIsNotMadeOnceTheSendWindowHasPassed() {
        let callOut = Self.callOut()
        let passed = SendWindow(seconds: 0, from: ContinuousClock.now.advanced(by: .seconds(-1)), wallClock: Date())
        let made = Mutex<[Int]>([])
        let answers = callOut.perform(
            2, window: passed,
            gating: { GatedCall(EndpointGate.Call(endpoint: "https://gateway.example/", owner: "m1"), windowed: $0 == 0) },
            call: { index, _ in
                made.withLock { $0.append(index) }
                return (Answer.made(index), .healthy)
            },
            heldBack: { _, reason in .heldBack(reason) })
        guard case .heldBack(.sendWindow(let reason)) = answers[0] else {
            Issue.record("the windowed call was made: \(answers[0])")
            return
        }
        #expect(reason.hasPrefix("send window passed"))
        #expect(answers[1] == .made(1))
        #expect(made.withLock { $0 } == [1], "the call past its window never reached the double")
        #expect(callOut.gate.inFlight("m1") == 0, "its slot was given back")
        #expect(callOut.gate.permits("https://gateway.example/"), "a held-back call is no failure of the endpoint")

        let open = callOut.openWindow()
        let inTime = callOut.perform(
            1, window: open, gating: { _ in GatedCall(EndpointGate.Call(endpoint: "https://gateway.example/", owner: "m1"), windowed: true) },
            call: { index, _ in (Answer.made(index), .healthy) }, heldBack: { _, reason in .heldBack(reason) })
        #expect(inTime == [.made(0)], "within its window the call is made")
    }

    /// One slot per merchant: of two calls of the same merchant, the one that finds the slot taken past its wait is
    /// held back `busy` (submit's `merchant_busy`, which spends no query budget) and never made; the circuit hears
    /// nothing of it, although the made call's failure (threshold 2) would count.
    @Test func aCallThatFindsNoSlotIsHeldBackBusyAndNeverMade() {
        let callOut = Self.callOut(maxConcurrent: 1, maxWait: 0.05, failureThreshold: 2)
        let heldBack = DispatchSemaphore(value: 0)
        let made = Mutex(0)
        let answers = callOut.perform(
            2, window: nil, gating: { _ in GatedCall(EndpointGate.Call(endpoint: "https://gateway.example/", owner: "m1")) },
            call: { index, _ in
                made.withLock { $0 += 1 }
                // Hold the slot until the other call has been held back.
                _ = heldBack.wait(timeout: .now() + 10)
                return (Answer.made(index), .failed(pause: nil))
            },
            heldBack: { _, reason in
                heldBack.signal()
                return .heldBack(reason)
            })
        #expect(answers.filter { $0 == .heldBack(.gate(.busy)) }.count == 1, "\(answers)")
        #expect(answers.filter { if case .made = $0 { true } else { false } }.count == 1, "\(answers)")
        #expect(made.withLock { $0 } == 1)
        #expect(callOut.gate.permits("https://gateway.example/"), "one failure, below the threshold: the busy refusal did not count")
        #expect(callOut.gate.inFlight("m1") == 0)
    }
}
