import Foundation
@testable import PaymentDomain
import Testing

/// Every interleaving of two and of three consumers of one payment against ``SubmitProtocol``, exhaustively and
/// without services: each consumer runs up to two rounds of plan → call → record (plan and record are atomic, as
/// the transactions under the payment's row lock are); the gateway processes an AUTH and answers, processes it and
/// loses the answer, or loses it unprocessed; any answer may come late (its record step is delayed past any other
/// step); the clock may pass every open attempt's reconciliation time at any point (a tick), after which the send
/// gate refuses an AUTH of an earlier window. After every step: at most one AUTH is live (sent and not proven
/// absent), and the gateway processed at most one; no transition is taken on a stale attempt. At the end a last
/// consumer drives the payment to its end, which must agree with what the gateway processed.
@Suite struct SubmitProtocolInterleavingTests {
    enum Delivery: CaseIterable { case answered, lostAfterProcessing, lostBeforeProcessing }

    enum ModelAnswer: Hashable { case authorised, uncertain, refused, found, notFound }

    struct Attempt: Hashable {
        var state: GatewayAttemptState = .sending
        /// The clock window it was planned in: it may be queried once the clock has left that window.
        var window: Int
        var sent = false
        var processed = false
        var provenAbsent = false
    }

    enum Phase: Hashable {
        case idle(rounds: Int)
        case calling(attempt: Int, query: Bool, rounds: Int)
        case recording(attempt: Int, answer: ModelAnswer, rounds: Int)
        case done

        /// A total order, to put interchangeable consumers in a canonical order (symmetry reduction).
        var key: Int {
            switch self {
            case .idle(let rounds): return rounds
            case .calling(let attempt, let query, let rounds): return 100 + attempt * 10 + (query ? 5 : 0) + rounds
            case .recording(let attempt, let answer, let rounds):
                let code = switch answer { case .authorised: 0; case .uncertain: 1; case .refused: 2; case .found: 3; case .notFound: 4 }
                return 1000 + attempt * 100 + code * 10 + rounds
            case .done: return 100_000
            }
        }
    }

    struct World: Hashable {
        var status = PaymentStatus.prepared
        var attempts: [Attempt] = []
        var notFoundSinceLatest = 0
        var lastNotFoundWindow: Int?
        var window = 0
        var ticks = 0
        var consumers: [Phase]
    }

    struct Explorer {
        let machine: SubmitProtocol
        let maxTicks: Int
        /// Feeds the protocol what a weaker stage would check (only that the payment is `submitting`, as if the answered
        /// attempt were current): the checker must then find double AUTHs.
        var oldRule = false
        var memo: [World: Int] = [:]
        var violations: [String] = []

        static func date(_ window: Int, _ offset: Double = 0) -> Date { Date(timeIntervalSince1970: Double(window) * 1000 + offset) }

        func snapshot(_ world: World) -> SubmitProtocol.Snapshot {
            SubmitProtocol.Snapshot(
                status: world.status, firstReceivedAt: Self.date(0), now: Self.date(world.window),
                latest: world.attempts.last.map { attempt in
                    SubmitProtocol.Attempt(id: Int64(world.attempts.count), state: attempt.state, reconcileAfter: Self.date(attempt.window, 500))
                },
                notFoundQueries: world.notFoundSinceLatest, lastNotFound: world.lastNotFoundWindow.map { Self.date($0) })
        }

        /// The successors of `world` by one step of consumer `index` (several: the gateway's choices).
        func steps(_ world: World, consumer index: Int, finalDriver: Bool = false) -> [(World, String?)] {
            var next = world
            switch world.consumers[index] {
            case .done:
                return []
            case .idle(let rounds):
                guard rounds > 0 else {
                    next.consumers[index] = .done
                    return [(next, nil)]
                }
                switch machine.plan(snapshot(world)) {
                case .handOff:
                    next.consumers[index] = .done
                case .wait:
                    next.consumers[index] = .idle(rounds: rounds - 1)
                case .end(let status, _, _):
                    next.status = status
                    next.consumers[index] = .done
                case .send:
                    guard world.status == .prepared, world.attempts.allSatisfy({ $0.state != .sending && $0.state != .uncertain }) else {
                        next.consumers[index] = .done
                        return [(next, "send planned beside an open attempt or from \(world.status)")]
                    }
                    next.attempts.append(Attempt(window: world.window))
                    next.status = .submitting
                    next.notFoundSinceLatest = 0
                    next.lastNotFoundWindow = nil
                    next.consumers[index] = .calling(attempt: next.attempts.count - 1, query: false, rounds: rounds)
                case .query(let id):
                    next.consumers[index] = .calling(attempt: Int(id) - 1, query: true, rounds: rounds)
                case .rearm:
                    next.status = .prepared
                    next.consumers[index] = .idle(rounds: rounds - 1)
                }
                return [(next, nil)]
            case .calling(let attempt, let query, let rounds):
                if query {
                    let answer: ModelAnswer = world.attempts.contains(where: \.processed) ? .found : .notFound
                    next.consumers[index] = .recording(attempt: attempt, answer: answer, rounds: rounds)
                    return [(next, nil)]
                }
                if world.window > world.attempts[attempt].window {
                    // The send gate: the attempt's window has passed, its bytes never leave.
                    next.consumers[index] = .recording(attempt: attempt, answer: .refused, rounds: rounds)
                    return [(next, nil)]
                }
                return (finalDriver ? [Delivery.answered] : Delivery.allCases).map { delivery in
                    var sent = next
                    sent.attempts[attempt].sent = true
                    sent.attempts[attempt].processed = delivery != .lostBeforeProcessing
                    sent.consumers[index] = .recording(attempt: attempt, answer: delivery == .answered ? .authorised : .uncertain, rounds: rounds)
                    return (sent, nil)
                }
            case .recording(let attempt, let answer, let rounds):
                let id = Int64(attempt + 1)
                var seen = snapshot(world)
                if oldRule, world.status == .submitting {
                    seen.latest = SubmitProtocol.Attempt(id: id, state: .sending, reconcileAfter: Self.date(world.attempts[attempt].window, 500))
                }
                let decision = machine.record(Self.answer(answer), attemptId: id, snapshot: seen)
                let current = world.status == .submitting && attempt == world.attempts.count - 1
                    && (world.attempts[attempt].state == .sending || world.attempts[attempt].state == .uncertain)
                var violation: String?
                switch decision {
                case .end(_, let terminal):
                    if !current { violation = "ended the payment on stale attempt \(id)" }
                    next.attempts[attempt].state = .completed
                    next.status = terminal.status
                    next.consumers[index] = .done
                case .uncertain:
                    if !current { violation = "marked stale attempt \(id) uncertain" }
                    next.attempts[attempt].state = .uncertain
                    next.consumers[index] = .idle(rounds: rounds - 1)
                case .notSent, .confirmedAbsent:
                    // Refused by the send gate, or confirmed absent by a query: either way never processed.
                    if !current { violation = "re-armed on stale attempt \(id) (\(answer))" }
                    next.attempts[attempt].state = .notSent
                    next.attempts[attempt].provenAbsent = true
                    next.status = .prepared
                    next.consumers[index] = .idle(rounds: rounds - 1)
                case .awaitConfirmation:
                    next.notFoundSinceLatest += 1
                    next.lastNotFoundWindow = world.window
                    next.consumers[index] = .idle(rounds: rounds - 1)
                case .inconclusive, .retry:
                    next.consumers[index] = .idle(rounds: rounds - 1)
                case .review:
                    next.status = .needsReview
                    next.consumers[index] = .done
                case .evidence:
                    next.consumers[index] = world.status.isTerminal ? .done : .idle(rounds: rounds - 1)
                }
                return [(next, violation)]
            }
        }

        static func answer(_ answer: ModelAnswer) -> SubmitProtocol.Answer {
            let authorised = GatewayResult(outcome: .authorized, errorCode: "0", transactionReference: "1-2-3", settleStatus: "0")
            return switch answer {
            case .authorised: .sent(authorised)
            case .uncertain: .sent(.local(.uncertain, code: "paypipe.transport", message: "timed out"))
            case .refused: .sent(.local(.transient, code: "paypipe.send_window", message: "not sent"))
            case .found: .queried(.found(authorised))
            case .notFound: .queried(.notFound)
            }
        }

        static func stateViolations(_ world: World) -> [String] {
            var found: [String] = []
            let processed = world.attempts.filter(\.processed).count
            if processed > 1 { found.append("the gateway processed \(processed) AUTHs") }
            let live = world.attempts.filter { $0.sent && !$0.provenAbsent }.count
            if live > 1 { found.append("\(live) AUTHs sent and not proven absent") }
            if world.status == .authorized, processed == 0 { found.append("authorised without a processed AUTH") }
            return found
        }

        /// After every consumer is done: the clock passes every window and one more consumer drives the payment to
        /// its end, the gateway now answering every AUTH.
        func finish(_ world: World) -> [String] {
            var world = world
            world.window += 1
            world.consumers.append(.idle(rounds: 6))
            let driver = world.consumers.count - 1
            while world.consumers[driver] != .done {
                guard let (next, violation) = steps(world, consumer: driver, finalDriver: true).first else { break }
                if let violation { return [violation] }
                world = next
                if case .idle = world.consumers[driver], world.status == .submitting {
                    // A consumer that waited comes back once the clock has passed the open attempt's window.
                    world.window += 1
                }
            }
            var found = Self.stateViolations(world)
            let processed = world.attempts.filter(\.processed).count
            if world.status != .authorized || processed != 1 {
                found.append("ended \(world.status.rawValue) with \(processed) processed AUTHs")
            }
            return found
        }

        /// Schedules from `world` to the end (each leaf checked); every state is expanded once. The consumers are
        /// interchangeable, so states that differ only in their order are one (the schedule count is unchanged).
        mutating func explore(_ state: World) -> Int {
            var world = state
            world.consumers.sort { $0.key < $1.key }
            if let known = memo[world] { return known }
            for violation in Self.stateViolations(world) { record(violation, world) }
            var successors: [World] = []
            for index in world.consumers.indices {
                for (next, violation) in steps(world, consumer: index) {
                    if let violation { record(violation, world) }
                    successors.append(next)
                }
            }
            if world.ticks < maxTicks {
                var ticked = world
                ticked.window += 1
                ticked.ticks += 1
                successors.append(ticked)
            }
            let count: Int
            if world.consumers.allSatisfy({ $0 == .done }) {
                for violation in finish(world) { record(violation, world) }
                count = 1
            } else {
                count = successors.reduce(0) { $0 + explore($1) }
            }
            memo[world] = count
            return count
        }

        mutating func record(_ violation: String, _ world: World) {
            if violations.count < 5 { violations.append("\(violation) in \(world)") }
        }
    }

    @Test("every interleaving of competing consumers charges at most once and settles on the gateway's truth", arguments: [2, 3])
    func interleavings(consumers: Int) {
        let started = Date()
        var explorer = Explorer(machine: SubmitProtocol(paymentDeadline: 1_000_000), maxTicks: 2)
        let schedules = explorer.explore(World(consumers: Array(repeating: .idle(rounds: 2), count: consumers)))
        print("SubmitProtocol interleavings: \(consumers) consumers, \(schedules) schedules, \(explorer.memo.count) distinct states, "
              + "\(String(format: "%.2f", Date().timeIntervalSince(started))) s")
        #expect(explorer.violations.isEmpty, "\(explorer.violations)")
        #expect(schedules > 1000)
    }

    /// A stale "not found" (attempt 1's, recorded after attempt 2 was planned) leaves the payment to attempt 2.
    @Test func aStaleNotFoundIsIgnored() {
        let explorer = Explorer(machine: SubmitProtocol(paymentDeadline: 1_000_000), maxTicks: 2)
        var world = World(consumers: [.recording(attempt: 0, answer: .notFound, rounds: 1), .done])
        world.status = .submitting
        world.window = 1
        world.attempts = [Attempt(state: .notSent, window: 0, sent: true, provenAbsent: true), Attempt(window: 1)]
        let steps = explorer.steps(world, consumer: 0)
        #expect(steps.allSatisfy { $0.1 == nil })
        #expect(steps.first?.0.status == .submitting)
        #expect(steps.first?.0.attempts[1].state == .sending)
    }

    /// The checker is not vacuous: a weaker rule (settle whatever attempt an answer names while the payment is
    /// `submitting`) is caught.
    @Test func theCheckerCatchesTheOldRule() {
        var explorer = Explorer(machine: SubmitProtocol(paymentDeadline: 1_000_000), maxTicks: 2, oldRule: true)
        _ = explorer.explore(World(consumers: [.idle(rounds: 2), .idle(rounds: 2)]))
        #expect(!explorer.violations.isEmpty)
    }

    /// A call the endpoint gate held back (no call slot: `merchant_busy`; the half-open trial taken: `circuit_open`)
    /// asked the gateway nothing, so it spends no query budget: even with one inconclusive query left before review,
    /// the payment is retried, not sent to review.
    @Test(arguments: ["merchant_busy", "circuit_open"])
    func aCallTheGateHeldBackSpendsNoQueryBudget(code: String) {
        let machine = SubmitProtocol(maxInconclusiveQueries: 2)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let snapshot = SubmitProtocol.Snapshot(
            status: .submitting, firstReceivedAt: now, now: now,
            latest: SubmitProtocol.Attempt(id: 7, state: .uncertain, reconcileAfter: now), inconclusiveQueries: 1)
        #expect(machine.record(.notAsked(code: code, reason: "held back"), attemptId: 7, snapshot: snapshot)
                == .retry(code: code, reason: "held back"))
        #expect(machine.record(.queried(.inconclusive(code: "paypipe.transport", reason: "timeout")), attemptId: 7, snapshot: snapshot)
                == .review(count: 2, code: "paypipe.transport", reason: "timeout"), "an inconclusive query does spend it")
    }
}
