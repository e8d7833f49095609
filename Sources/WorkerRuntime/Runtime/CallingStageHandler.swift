import Foundation
import HTTP
import Postgres

/// What a stage's prepare step decided for one message: its result, or a call to make.
public enum Prepared<Call: Sendable>: Sendable {
    case decided(Result<StageOutcome, StageFailure>)
    case call(Call)
}

/// What a finished call told about its endpoint, which a stage's `perform` returns beside the answer: the endpoint
/// gate's circuit for that endpoint learns from it (``CircuitState``).
public enum CallReport: Sendable, Equatable {
    /// It answered (whatever it said about the request itself).
    case healthy
    /// It failed as an endpoint (refused, timed out, 5xx); `pause`: its `Retry-After` in seconds, if any.
    case failed(pause: Double?)
    /// The call says nothing about the endpoint (not sent after all).
    case silent
}

/// What a stage's record step decided for one answered message.
public enum Recorded: Sendable, Equatable {
    case decided(Result<StageOutcome, StageFailure>)
    /// Prepare the message again in the next round (e.g. the gateway confirmed the AUTH was never processed).
    case again
}

/// One call of the call-out phase with its answer, as the record step sees it.
public struct Answered<Message: Sendable, Call: Sendable, Answer: Sendable>: Sendable {
    public let message: Message
    public let call: Call
    public let answer: Answer
}

/// How the call-out phase lets one call through: its endpoint gate key, its rate, and whether the round's send window
/// bounds it (an AUTH does; a status query, which charges nothing, does not).
public struct GatedCall: Sendable, Equatable {
    public let gate: EndpointGate.Call
    public let rate: Double?
    public let windowed: Bool

    public init(_ gate: EndpointGate.Call, rate: Double? = nil, windowed: Bool = false) {
        (self.gate, self.rate, self.windowed) = (gate, rate, windowed)
    }
}

/// Why the call-out phase did not make a call. Either way nothing was sent.
public enum HeldBack: Sendable, Equatable {
    /// The endpoint gate refused: no slot of the owner within the wait (`busy`), the circuit, the rate.
    case gate(EndpointGate.Refusal)
    /// The round's send window closed while the call waited for its slot.
    case sendWindow(String)
}

/// A stage that calls out (gateway, webhooks): the runtime owns its whole batch shape, in rounds of three phases,
/// no transaction ever open across the network:
/// 1. **prepare**: one transaction (``BatchTransaction/run(batch:on:_:)``, halving on failure) reads the batch under
///    row locks, decides, and applies set-based what must be committed before a call (submit's `sending` attempt);
/// 2. **call out**: the calls run concurrently on ``CallOut/pool`` through the one ``EndpointGate`` (circuit,
///    concurrency slots, rate, `Retry-After`), never after the round's send window; a call held back is not made
///    and its answer is the stage's ``heldBack(_:for:because:)`` (it says nothing about the endpoint);
/// 3. **record**: one transaction, the same halving path, records every answer and every permanent failure of the
///    round (``recordFailure(_:for:transaction:)``).
/// A message recorded ``Recorded/again`` goes through another round (at most ``CallOut/rounds``). Decrypt and
/// authorize are this shape with an empty call-out phase (``TransactionalStageHandler``).
public protocol CallingStageHandler: StageHandler {
    associatedtype Call: Sendable
    associatedtype Answer: Sendable
    /// What the record transaction decides once for all the round's answers before recording them (notify: the
    /// endpoints' health); `Void` for none.
    associatedtype Observed = Void

    var callOut: CallOut { get }

    /// Phase 1, inside the prepare transaction: one result per message. A decided failure is a result; throw only when
    /// the batch's statements fail (the runtime then halves the batch). `window` is the round's send window.
    func prepare(_ batch: [Message], window: SendWindow?, transaction: PostgresConnection) throws -> [Prepared<Call>]

    /// How `call` goes through the gate.
    func gating(_ call: Call, for message: Message) -> GatedCall

    /// Phase 2 for one call, on a pool thread's client, holding its gate slot: the answer and what it tells the
    /// endpoint's circuit.
    func perform(_ call: Call, for message: Message, window: SendWindow?, client: HTTPClient) -> (answer: Answer, report: CallReport)

    /// The answer of a call that was not made.
    func heldBack(_ call: Call, for message: Message, because reason: HeldBack) -> Answer

    /// Phase 3's batch-level step, once per record transaction, before any answer is recorded (a failure in it must
    /// not fail the recording: keep it in a savepoint).
    func observe(_ answers: [Answered<Message, Call, Answer>], transaction: PostgresConnection) -> Observed

    /// Phase 3, inside the record transaction: one decision per answer. Throw only when the statements fail.
    func record(_ answers: [Answered<Message, Call, Answer>], observed: Observed, transaction: PostgresConnection) throws -> [Recorded]

    /// Records a permanent failure of the round (on the payment side: its payment ends `failed`), inside the record
    /// transaction; `nil` (the default): nothing to record, the runtime dead-letters the message.
    func recordFailure(_ failure: PermanentFailure, for message: Message, transaction: PostgresConnection) throws -> StageOutcome?

    /// After the record transaction committed (or failed): what it recorded, e.g. for counting what committed once.
    func committed(_ answers: [Answered<Message, Call, Answer>], _ recorded: [Result<Recorded, StageFailure>])

    /// The result of a message still not settled after ``CallOut/rounds`` rounds.
    func unsettled(_ message: Message) -> StageFailure
}

extension CallingStageHandler {
    public func recordFailure(_ failure: PermanentFailure, for message: Message, transaction: PostgresConnection) throws -> StageOutcome? { nil }
    public func committed(_ answers: [Answered<Message, Call, Answer>], _ recorded: [Result<Recorded, StageFailure>]) {}
}

extension CallingStageHandler where Observed == Void {
    public func observe(_ answers: [Answered<Message, Call, Answer>], transaction: PostgresConnection) {}
}

/// The call-out phase's means, shared by every lane of a worker.
public struct CallOut: Sendable {
    /// The worker's call threads, each with a keep-alive HTTP client.
    public let pool: HTTPClientPool
    public let gate: EndpointGate
    /// Seconds from a round's start (before its prepare commits) during which a windowed call may still leave; `nil`:
    /// no window.
    public let sendWindow: Double?
    /// Rounds a batch may take (a message recorded ``Recorded/again`` takes another).
    public let rounds: Int

    public init(pool: HTTPClientPool, gate: EndpointGate, sendWindow: Double? = nil, rounds: Int = 1) {
        (self.pool, self.gate, self.sendWindow, self.rounds) = (pool, gate, sendWindow, max(1, rounds))
    }

    /// A window starting now: taken before a round's prepare commits, so it closes no later than anything the prepare
    /// stamped with the same number of seconds on the database clock.
    public func openWindow() -> SendWindow? {
        sendWindow.map { SendWindow(seconds: $0, from: ContinuousClock.now, wallClock: Date()) }
    }

    /// Phase 2: every call on the pool, each through the gate; answers in order. A call is made only holding a slot,
    /// and a windowed call only while `window` is open (checked once the slot is held, however long that took); one
    /// held back is not made, its answer is `heldBack`'s, and it reports nothing to the circuit.
    public func perform<Answer: Sendable>(
        _ count: Int, window: SendWindow?, gating: @escaping @Sendable (Int) -> GatedCall,
        call: @escaping @Sendable (Int, HTTPClient) -> (answer: Answer, report: CallReport),
        heldBack: @escaping @Sendable (Int, HeldBack) -> Answer
    ) -> [Answer] {
        let gate = gate
        return pool.perform(count) { index, client in
            let gated = gating(index)
            let permit: EndpointGate.Permit
            switch gate.acquire(gated.gate, rate: gated.rate) {
            case .refused(let refusal): return heldBack(index, .gate(refusal))
            case .acquired(let acquired): permit = acquired
            }
            if gated.windowed, let window, let refusal = window.refusal(at: ContinuousClock.now) {
                gate.release(permit, report: .silent)
                return heldBack(index, .sendWindow(refusal))
            }
            let (answer, report) = call(index, client)
            gate.release(permit, report: report)
            return answer
        }
    }
}

/// One item of a round's record transaction.
private enum RecordItem<Message: Sendable, Call: Sendable, Answer: Sendable> {
    case answer(index: Int, Answered<Message, Call, Answer>)
    case failure(index: Int, PermanentFailure, Message)

    var index: Int {
        switch self {
        case .answer(let index, _), .failure(let index, _, _): index
        }
    }
}

extension CallingStageHandler {
    public func process(_ batch: [Message], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        processInRounds(batch, database: database)
    }

    /// The runtime's batch shape (see ``CallingStageHandler``); a stage that overrides `process` for some of its
    /// messages calls this for the others.
    public func processInRounds(_ batch: [Message], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        var results = [Result<StageOutcome, StageFailure>?](repeating: nil, count: batch.count)
        var active = Array(batch.indices)
        var failures: [(index: Int, failure: PermanentFailure)] = []
        for _ in 0..<callOut.rounds where !active.isEmpty || !failures.isEmpty {
            let window = callOut.openWindow()
            let prepared = BatchTransaction.settle(active.map { batch[$0] }, on: database) { try prepare($0, window: window, transaction: $1) }
            var calls: [(index: Int, call: Call)] = []
            for (offset, decision) in prepared.enumerated() {
                let index = active[offset]
                switch decision {
                case .success(.call(let call)): calls.append((index, call))
                case .success(.decided(.failure(.permanent(let failure)))), .failure(.permanent(let failure)): failures.append((index, failure))
                case .success(.decided(let result)): results[index] = result
                case .failure(let failure): results[index] = .failure(failure)
                }
            }
            let messages = calls.map { batch[$0.index] }, made = calls.map(\.call)
            let answers = callOut.perform(
                calls.count, window: window, gating: { gating(made[$0], for: messages[$0]) },
                call: { perform(made[$0], for: messages[$0], window: window, client: $1) },
                heldBack: { heldBack(made[$0], for: messages[$0], because: $1) })
            let items = zip(calls, answers).map { call, answer in
                RecordItem.answer(index: call.index, Answered(message: batch[call.index], call: call.call, answer: answer))
            } + failures.map { RecordItem<Message, Call, Answer>.failure(index: $0.index, $0.failure, batch[$0.index]) }
            failures = []
            active = []
            for (item, recorded) in zip(items, record(items, on: database)) {
                switch (item, recorded) {
                case (_, .success(.again)): active.append(item.index)
                // A permanent failure an answer led to is recorded in the next record transaction; one whose own
                // recording failed stands as it is.
                case (.answer, .success(.decided(.failure(.permanent(let failure))))), (.answer, .failure(.permanent(let failure))):
                    failures.append((item.index, failure))
                case (_, .success(.decided(let result))): results[item.index] = result
                case (_, .failure(let failure)): results[item.index] = .failure(failure)
                }
            }
        }
        if !failures.isEmpty {
            let items = failures.map { RecordItem<Message, Call, Answer>.failure(index: $0.index, $0.failure, batch[$0.index]) }
            for (item, recorded) in zip(items, record(items, on: database)) {
                switch recorded {
                case .success(.decided(let result)): results[item.index] = result
                case .success(.again): results[item.index] = .failure(unsettled(batch[item.index]))
                case .failure(let failure): results[item.index] = .failure(failure)
                }
            }
        }
        for index in active { results[index] = .failure(unsettled(batch[index])) }
        return results.map { $0! }
    }

    /// Phase 3: one transaction (halving on failure) for the round's answers and permanent failures, in item order.
    private func record(_ items: [RecordItem<Message, Call, Answer>], on database: PostgresConnection) -> [Result<Recorded, StageFailure>] {
        let recorded = BatchTransaction.settle(items, on: database) { items, transaction in
            let answered = items.compactMap { item -> Answered<Message, Call, Answer>? in
                if case .answer(_, let answered) = item { return answered }
                return nil
            }
            var recorded = answered.isEmpty ? [] : try record(answered, observed: observe(answered, transaction: transaction), transaction: transaction)[...]
            precondition(recorded.count == answered.count, "record returns one decision per answer")
            return try items.map { item in
                switch item {
                case .answer: return recorded.popFirst()!
                case .failure(_, let failure, let message):
                    return .decided(try recordFailure(failure, for: message, transaction: transaction).map { .success($0) } ?? .failure(.permanent(failure)))
                }
            }
        }
        var answers: [Answered<Message, Call, Answer>] = [], outcomes: [Result<Recorded, StageFailure>] = []
        for (item, result) in zip(items, recorded) {
            guard case .answer(_, let answered) = item else { continue }
            answers.append(answered)
            outcomes.append(result)
        }
        if !answers.isEmpty { committed(answers, outcomes) }
        return recorded
    }
}

extension Prepared {
    public static func finished(_ outcome: StageOutcome) -> Self { .decided(.success(outcome)) }
    public static func failed(_ failure: StageFailure) -> Self { .decided(.failure(failure)) }
}

extension Recorded {
    public static func finished(_ outcome: StageOutcome) -> Self { .decided(.success(outcome)) }
    public static func failed(_ failure: StageFailure) -> Self { .decided(.failure(failure)) }
}

/// How long a call may wait on our side before its bytes leave, the call-out phase's exactly-once check: ``gate``
/// refuses to send after ``deadline`` (measured on the monotonic clock from before the call's attempt was committed,
/// so never later than the attempt's `send_deadline` on the database clock), however long the call queued behind
/// others. A refusal is certain-not-sent (``HTTP/HTTPClientError/refusedBeforeSending(_:)``). ``expiresAt`` is the
/// wall-clock deadline a signed request's own expiry (the AUTH JWT's `exp`) derives from.
public struct SendWindow: Sendable {
    public let deadline: ContinuousClock.Instant
    public let expiresAt: Date

    public init(deadline: ContinuousClock.Instant, expiresAt: Date) {
        self.deadline = deadline
        self.expiresAt = expiresAt
    }

    /// A window of `seconds` from `start` (taken before the attempt is committed).
    public init(seconds: Double, from start: ContinuousClock.Instant, wallClock: Date) {
        deadline = start.advanced(by: .milliseconds(Int64((seconds * 1000).rounded(.down))))
        expiresAt = wallClock.addingTimeInterval(seconds)
    }

    /// Why a send starting at `now` is refused; `nil` while the window is open (the deadline itself included).
    public func refusal(at now: ContinuousClock.Instant) -> String? {
        now <= deadline ? nil : "send window passed \(now - deadline) ago"
    }

    /// The check libcurl runs once connected, right before the first request byte.
    public var gate: HTTPSendGate {
        let window = self
        return HTTPSendGate { _ in window.refusal(at: ContinuousClock.now) }
    }
}