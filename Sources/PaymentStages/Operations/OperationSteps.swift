import Foundation
import Pipeline
import Postgres

/// The database half of the exactly-once operation protocol (docs/operations-lifecycle.md), each step one short
/// transaction under the round's payment row locks, the gateway calls between them with no transaction open; each step
/// reads its round together, decides every message purely, then writes:
///
/// 1. ``plan(_:clock:on:)``: decides each request (``decide(_:_:transport:clock:)`` on ``OperationProtocol``) on the
///    rows read under the locks and, to send, commits the operation `requested` with a `sending` attempt; a redelivered
///    operation resumes its own attempts instead (never a second operation);
/// 2. the caller sends the requests (or the status queries lost answers need);
/// 3. ``settle(_:queries:actor:clock:on:)``: records the answers and queries and, when the gateway confirmed an
///    operation, moves the payment's lifecycle to the decided effect.
public struct OperationSteps: Sendable {
    public let store = OperationStore()
    public let rules = OperationProtocol()
    /// Inconclusive status queries of a lost answer before the operation goes to review.
    public var maxInconclusiveQueries: Int

    public init(maxInconclusiveQueries: Int = 3) {
        self.maxInconclusiveQueries = maxInconclusiveQueries
    }

    /// What to do after ``plan(_:transport:timing:on:)`` committed.
    public enum Plan: Sendable, Equatable {
        /// Send `request` for the attempt just committed.
        case send(OperationStore.Operation, attempt: Int64, request: GatewayOperation)
        /// The answer of an earlier attempt was lost: query the AUTH (its connector's status query, by its transaction reference),
        /// recorded as attempt `attempt`, then ``settle(_:queries:actor:clock:on:)``.
        case query(OperationStore.Operation, attempt: Int64, transactionReference: String)
        /// The operation is finished (now or earlier): report it (again).
        case finished(OperationStore.Operation)
        /// The operation waits for a person; nothing is sent or reported.
        case review(OperationStore.Operation)
        /// The operationId was used with other content: dead-letter, the first untouched.
        case conflict(existing: OperationStore.Operation)
        /// Not now: retry later (nothing recorded), at `until` (this worker's clock) when the wait's end is known.
        case wait(code: String, reason: String, until: Date? = nil)
        /// Nothing to send, nothing to report (a late AUTH already cancelled, or one a person must handle).
        case nothing(reason: String)
    }

    /// The operation id of the automatic void of an authorisation not captured within `captureWithin`: one per payment.
    public static func expiryOperationId(_ paymentId: UUID) -> String { "expiry-\(paymentId.paymentIDText)" }

    /// The reconciler's automatic void of a payment (one per payment): of a manual authorisation not captured within
    /// `captureWithin` (requested by `expiry`, decided by ``OperationProtocol/expiry(_:gateway:)``), or of a late AUTH
    /// on a payment PayPipe reported failed and then put up for review (requested by `late_authorization`, decided by
    /// ``OperationProtocol/lateAuthorization(_:transport:captureMode:)``), as the payment's status under its lock says;
    /// audited and reported like any other operation. A round of one (``plan(_:clock:on:)``).
    public func planAutomaticVoid(
        _ payment: StageMessage, transport: OperationProtocol.Transport, timing: OperationStore.SendTiming, clock: BatchClock? = nil,
        on transaction: PostgresConnection
    ) throws -> Plan {
        try plan([.automaticVoid(payment, transport: transport, timing: timing)], clock: clock ?? BatchClock.read(transaction), on: transaction).plans[0]
    }

    /// The operation id of the automatic void of a payment's late AUTH: one per payment.
    public static func lateAuthorizationOperationId(_ paymentId: UUID) -> String { "late-authorization-\(paymentId.paymentIDText)" }

    /// The void request of a payment's automatic void (one per payment under its operation id), and who requests it:
    /// `expiry` for a payment still `authorized` (its authorisation not captured within `captureWithin`), else
    /// `late_authorization`.
    public static func automaticVoid(of paymentId: UUID, merchantId: String, status: PaymentStatus?) -> (OperationRequest, OperationStore.Requester) {
        let (operationId, requestedBy): (String, OperationStore.Requester) = status == .authorized
            ? (expiryOperationId(paymentId), .expiry) : (lateAuthorizationOperationId(paymentId), .lateAuthorization)
        return (OperationRequest(kind: .void, operationId: operationId, merchantId: merchantId, payment: .paymentId(paymentId), amount: nil), requestedBy)
    }

    /// What a late AUTH's void is decided on of the payment's row, besides its money state.
    public struct PaymentFacts: Sendable, Equatable {
        public var status: PaymentStatus
        public var errorCode: String?
        public var amountMinor: Int64?
        public var captureMode: CaptureMode

        public init(status: PaymentStatus, errorCode: String?, amountMinor: Int64?, captureMode: CaptureMode) {
            (self.status, self.errorCode, self.amountMinor, self.captureMode) = (status, errorCode, amountMinor, captureMode)
        }

        public init(_ record: PaymentRecord) {
            self.init(status: record.status, errorCode: record.errorCode, amountMinor: record.amountMinor, captureMode: record.captureMode)
        }
    }

    /// The rule of an automatic void (pure), on the rows its round read under the payment's lock (`record`: the
    /// payment's row) and the batch's clock: an earlier one is resumed; an expiry is decided by
    /// ``OperationProtocol/expiry(_:gateway:)``, a late AUTH's void by ``OperationProtocol/lateAuthorization(_:transport:captureMode:)``.
    public func decideVoid(_ request: OperationRequest, requestedBy: OperationStore.Requester, _ input: PlanInput, record: PaymentFacts?,
                           transport: OperationProtocol.Transport, clock: BatchClock) -> PlanDecision {
        if let existing = input.existing { return resumed(existing, attempts: input.attempts, transport: transport, clock: clock) }
        guard let paymentId = input.payment, let money = input.money, let record else {
            return .plan(.nothing(reason: "payment \(request.payment) does not exist"))
        }
        guard requestedBy == .expiry else {
            guard record.status == .needsReview, record.errorCode == "late_authorization", let amount = record.amountMinor else {
                return .plan(.nothing(reason: "payment \(paymentId) is not a late authorisation for review"))
            }
            guard let facts = input.gateway else { return .plan(.nothing(reason: "no AUTH reference recorded for payment \(paymentId)")) }
            switch rules.lateAuthorization(facts, transport: transport, captureMode: record.captureMode) {
            case .void(let void):
                // No lifecycle on a payment that never ended authorised: the effect only names the event and its amount.
                let voided = MoneyLifecycle(status: .voided, captureMode: .automatic, authorizedAmount: amount, capturedAmount: 0)
                return .begin(paymentId: paymentId, send: void, before: nil, effect: OperationProtocol.Effect(lifecycle: voided, event: .voided, amount: amount))
            case .alreadyCancelled:
                return .plan(.nothing(reason: "the late AUTH is already cancelled at the gateway"))
            case .wait(let code, let reason):
                return .plan(.wait(code: code, reason: reason))
            case .review(_, let reason):
                return .plan(.nothing(reason: reason))
            }
        }
        let snapshot = OperationProtocol.Snapshot(transport: transport, paymentStatus: money.status, lifecycle: money.lifecycle,
                                                  openOperation: input.open.map(\.operationId),
                                                  openOperationForReview: input.open?.state == .needsReview, now: clock.database)
        switch rules.expiry(snapshot, gateway: Self.newest(input.gateway, money)) {
        case nil:
            return .plan(.nothing(reason: "not due"))
        case .send(let void, let effect)?:
            return .begin(paymentId: paymentId, send: void, before: money.lifecycle, effect: effect)
        case .wait(let code, let reason)?:
            return .plan(.wait(code: code, reason: reason))
        case .refuse(let code, let reason)?:
            return .refuse(paymentId: paymentId, code: code, reason: reason)
        case .duplicate?, .conflict?:
            return .plan(.nothing(reason: "not a decision of expiry"))
        }
    }

    /// The AUTH's facts with the payment's recorded settle status, when learnt after the AUTH: the newer fact.
    static func newest(_ facts: OperationProtocol.GatewayFacts?, _ money: PaymentStore.MoneyState) -> OperationProtocol.GatewayFacts? {
        facts.map { facts in
            money.settleStatus.map { OperationProtocol.GatewayFacts(transactionReference: facts.transactionReference, settleStatus: $0) } ?? facts
        }
    }

    /// Decides `request` under the payment's lock, records the decision, and says what to do. `transport` is the
    /// merchant's; `timing` the send window of a new attempt. A round of one (``plan(_:on:)``).
    public func plan(
        _ request: OperationRequest, requestedBy: OperationStore.Requester = .merchant, transport: OperationProtocol.Transport,
        timing: OperationStore.SendTiming, clock: BatchClock? = nil, on transaction: PostgresConnection
    ) throws -> Plan {
        let clock = try clock ?? BatchClock.read(transaction)
        return try plan([Planning(request: request, requestedBy: requestedBy, transport: transport, timing: timing)], clock: clock,
                        on: transaction).plans[0]
    }

    /// One request of a round's prepare, with its merchant's transport and the send window of a new attempt.
    public struct Planning: Sendable {
        public var request: OperationRequest
        public var requestedBy: OperationStore.Requester
        public var transport: OperationProtocol.Transport
        public var timing: OperationStore.SendTiming
        /// The reconciler's automatic void of the payment: an expiry or a late AUTH's, as the payment's status under
        /// its lock says (``automaticVoid(of:merchantId:status:)``), decided by ``decideVoid(_:requestedBy:_:record:transport:clock:)``.
        public var automatic = false

        public init(request: OperationRequest, requestedBy: OperationStore.Requester = .merchant, transport: OperationProtocol.Transport,
                    timing: OperationStore.SendTiming) {
            (self.request, self.requestedBy, self.transport, self.timing) = (request, requestedBy, transport, timing)
        }

        /// The automatic void of a payment the reconciler handed over.
        public static func automaticVoid(_ payment: StageMessage, transport: OperationProtocol.Transport, timing: OperationStore.SendTiming) -> Planning {
            let (request, requestedBy) = OperationSteps.automaticVoid(of: payment.paymentId, merchantId: payment.merchantId, status: .authorized)
            var planning = Planning(request: request, requestedBy: requestedBy, transport: transport, timing: timing)
            planning.automatic = true
            return planning
        }
    }

    /// A round's plans, in order, and the payments read under its locks (what the calls' contexts need).
    public struct Planned: Sendable {
        public let plans: [Plan]
        public let payments: [UUID: PaymentRecord]
    }

    /// Plans a round of requests (at most one per payment: the stage's waves hold one message per merchant) on one
    /// batch read: the payments resolved, locked and read in one statement each, then the operations with the
    /// requests' ids, the payments' open operations, their AUTH facts and the existing operations' attempts, one
    /// statement each; every request decided purely (``decide(_:_:transport:clock:)``) on those rows and the batch's
    /// clock; then what each decision records (the operation and its `sending` attempt, a refusal, a new attempt or a
    /// review), committed by the caller before any call.
    public func plan(_ round: [Planning], clock: BatchClock, on transaction: PostgresConnection) throws -> Planned {
        guard !round.isEmpty else { return Planned(plans: [], payments: [:]) }
        let resolved = try store.resolvePayments(round.map { ($0.request.merchantId, $0.request.payment) }, on: transaction)
        // The locks first: whatever is read after them is what no other operation of these payments can change meanwhile.
        let locked = try PaymentStore().lock(Array(Set(resolved.compactMap { $0 })), on: transaction)
        // An automatic void is an expiry or a late AUTH's as its payment's status under the lock says.
        let round = zip(round, resolved).map { planning, payment in
            guard planning.automatic, let payment else { return planning }
            var automatic = planning
            (automatic.request, automatic.requestedBy) = Self.automaticVoid(of: payment, merchantId: planning.request.merchantId,
                                                                            status: locked[payment]?.record.status)
            return automatic
        }
        let requests = round.map(\.request)
        let existing = try store.find(requests.map { ($0.merchantId, $0.operationId) }, on: transaction)
        let open = try store.open(paymentIds: Array(locked.keys), on: transaction)
        let facts = try store.gatewayFacts(paymentIds: Array(locked.keys), on: transaction)
        let resumed = existing.values.filter { $0.state == .requested }
        // A requested operation resumed on a payment the request did not name (never expected) is locked too.
        _ = try PaymentStore().lock(Array(Set(resumed.compactMap(\.paymentId)).subtracting(locked.keys)), on: transaction)
        let attempts = try store.attempts(operations: resumed.map(\.id), on: transaction)
        let decisions = zip(round, resolved).map { planning, payment in
            let found = existing[OperationStore.Key(merchantId: planning.request.merchantId, operationId: planning.request.operationId)]
            let input = PlanInput(payment: payment, money: payment.flatMap { locked[$0]?.money }, existing: found,
                                  open: payment.flatMap { open[$0] }, gateway: payment.flatMap { facts[$0] },
                                  attempts: found.flatMap { attempts[$0.id] } ?? [])
            return planning.automatic
                ? decideVoid(planning.request, requestedBy: planning.requestedBy, input, record: payment.flatMap { locked[$0].map { PaymentFacts($0.record) } },
                             transport: planning.transport, clock: clock)
                : decide(planning.request, input, transport: planning.transport, clock: clock)
        }
        return Planned(plans: try record(decisions, round, on: transaction), payments: locked.mapValues(\.record))
    }

    /// What a round's decisions write before any call (pure, ``writes(_:_:)``), one list per kind, each entry with its
    /// request's place in the round.
    public struct PlanWrites: Sendable {
        public var beginnings: [(index: Int, row: OperationStore.Beginning)] = []
        public var refusals: [(index: Int, row: OperationStore.Refusal)] = []
        /// A resumed operation's new attempt: its request sent again, or (`query`) the status query of its lost answer.
        public var attempts: [(index: Int, row: OperationStore.NewAttempt, operation: OperationStore.Operation, request: GatewayOperation, query: Bool)] = []
        public var reviews: [(index: Int, row: OperationStore.Ending)] = []
    }

    /// The writes of a round's decisions (pure): a new operation with its `sending` attempt, a refusal, a resumed
    /// operation's new attempt or status query, or its review.
    public static func writes(_ decisions: [PlanDecision], _ round: [Planning]) -> PlanWrites {
        var writes = PlanWrites()
        for (index, (decision, planning)) in zip(decisions, round).enumerated() {
            let request = planning.request
            switch decision {
            case .plan:
                continue
            case .refuse(let paymentId, let code, let reason):
                writes.refusals.append((index, .init(request: request, paymentId: paymentId, requestedBy: planning.requestedBy, code: code, reason: reason)))
            case .begin(let paymentId, let send, let before, let effect):
                writes.beginnings.append((index, .init(request: request, paymentId: paymentId, requestedBy: planning.requestedBy, send: send,
                                                       stored: stored(send, planning.transport), before: before, effect: effect, timing: planning.timing)))
            case .resume(let operation, .review(let code, let reason)):
                writes.reviews.append((index, .init(operation: operation.id, state: .needsReview, code: code, reason: reason)))
            case .resume(let operation, .send(let send)):
                let requestType = operation.requestType ?? planning.transport.requestNames.name(of: send)
                writes.attempts.append((index, .init(operation: operation.id, requestType: requestType, timing: planning.timing), operation, send, false))
            case .resume(let operation, .query(let query)):
                writes.attempts.append((index, .init(operation: operation.id, requestType: queryType(planning.transport), timing: nil), operation, query, true))
            }
        }
        return writes
    }

    /// Records what a round's decisions say before the calls, one statement per kind whatever the round's size (the
    /// new operations with their attempts, the refusals, the resumed operations' attempts, the reviews), reads the
    /// operations written back in one, and says what each message then does.
    func record(_ decisions: [PlanDecision], _ round: [Planning], on transaction: PostgresConnection) throws -> [Plan] {
        let writes = Self.writes(decisions, round)
        let begun = try store.begin(writes.beginnings.map(\.row), on: transaction)
        let refused = try store.refuse(writes.refusals.map(\.row), on: transaction)
        let attempts = try store.beginAttempts(writes.attempts.map(\.row), on: transaction)
        _ = try store.end(writes.reviews.map(\.row), on: transaction)
        let loaded = try store.load(begun.compactMap { $0?.operation } + refused.compactMap { $0 } + writes.reviews.map(\.row.operation), on: transaction)
        var plans = decisions.map { decision -> Plan in
            if case .plan(let plan) = decision { plan } else { .nothing(reason: "not recorded") }
        }
        let concurrently = { (index: Int) in Plan.wait(code: "operation_in_progress", reason: "operation \(round[index].request.operationId) was recorded concurrently") }
        for ((index, beginning), ids) in zip(writes.beginnings, begun) {
            plans[index] = ids.flatMap { loaded[$0.operation] }.map { .send($0, attempt: ids!.attempt, request: beginning.send) } ?? concurrently(index)
        }
        for ((index, _), id) in zip(writes.refusals, refused) {
            plans[index] = id.flatMap { loaded[$0] }.map(Plan.finished) ?? concurrently(index)
        }
        for (resumed, attempt) in zip(writes.attempts, attempts) {
            let (operation, request) = (resumed.operation, resumed.request)
            guard let attempt else {
                plans[resumed.index] = .wait(code: "operation_in_progress", reason: "operation \(operation.operationId) changed concurrently")
                continue
            }
            plans[resumed.index] = resumed.query ? .query(operation, attempt: attempt, transactionReference: request.targetReference)
                : .send(operation, attempt: attempt, request: request)
        }
        for (index, review) in writes.reviews {
            guard case .resume(let operation, _) = decisions[index] else { continue }
            plans[index] = .review(loaded[review.operation] ?? operation)
        }
        return plans
    }

    /// What a request is decided on: the rows its round read under the payment's lock.
    public struct PlanInput: Sendable, Equatable {
        /// The payment the request names, if it is the merchant's.
        public var payment: UUID?
        public var money: PaymentStore.MoneyState?
        /// The merchant's operation with the request's `operationId`, on any payment.
        public var existing: OperationStore.Operation?
        /// The payment's open operation (`requested` or `needs_review`).
        public var open: OperationStore.Operation?
        public var gateway: OperationProtocol.GatewayFacts?
        /// The existing operation's attempts, oldest first.
        public var attempts: [OperationStore.Attempt]

        public init(payment: UUID?, money: PaymentStore.MoneyState?, existing: OperationStore.Operation? = nil, open: OperationStore.Operation? = nil,
                    gateway: OperationProtocol.GatewayFacts? = nil, attempts: [OperationStore.Attempt] = []) {
            (self.payment, self.money, self.existing, self.open, self.gateway, self.attempts) = (payment, money, existing, open, gateway, attempts)
        }
    }

    /// What a request's decision records before any call.
    public enum PlanDecision: Sendable, Equatable {
        /// Nothing to record: the plan as it is.
        case plan(Plan)
        /// Record the operation refused (`failed` with `code`) and report it.
        case refuse(paymentId: UUID, code: String, reason: String)
        /// Record the operation `requested` with its `sending` attempt, then send `send`.
        case begin(paymentId: UUID, send: GatewayOperation, before: MoneyLifecycle?, effect: OperationProtocol.Effect)
        /// An existing `requested` operation continues (``Resumption``).
        case resume(OperationStore.Operation, Resumed)

        public enum Resumed: Sendable, Equatable {
            case review(code: String, reason: String)
            case send(GatewayOperation)
            case query(GatewayOperation)
        }
    }

    /// The rule of a request (pure): on the rows read under its payment's lock and the batch's clock, by
    /// ``OperationProtocol/decide(_:_:gateway:)`` and, for the same operation again, ``resumption(of:attempts:reconcilable:maxInconclusiveQueries:clock:)``.
    public func decide(_ request: OperationRequest, _ input: PlanInput, transport: OperationProtocol.Transport, clock: BatchClock) -> PlanDecision {
        guard let paymentId = input.payment else {
            if let existing = input.existing {
                return existing.contentHash == request.contentHash ? resumed(existing, attempts: input.attempts, transport: transport, clock: clock)
                    : .plan(.conflict(existing: existing))
            }
            return .plan(.wait(code: "operation_payment_unknown", reason: "no payment \(request.payment) of merchant \(request.merchantId) (yet)"))
        }
        guard let money = input.money else { return .plan(.wait(code: "operation_payment_unknown", reason: "payment \(paymentId) vanished")) }
        let snapshot = OperationProtocol.Snapshot(
            transport: transport, paymentStatus: money.status, lifecycle: money.lifecycle, existing: input.existing?.record,
            openOperation: input.open.map(\.operationId), openOperationForReview: input.open?.state == .needsReview, now: clock.database)
        switch rules.decide(request, snapshot, gateway: Self.newest(input.gateway, money)) {
        case .duplicate:
            return resumed(input.existing!, attempts: input.attempts, transport: transport, clock: clock)
        case .conflict:
            return .plan(.conflict(existing: input.existing!))
        case .wait(let code, let reason):
            return .plan(.wait(code: code, reason: reason))
        case .refuse(let code, let reason):
            return .refuse(paymentId: paymentId, code: code, reason: reason)
        case .send(let gatewayRequest, let effect):
            return .begin(paymentId: paymentId, send: gatewayRequest, before: money.lifecycle, effect: effect)
        }
    }

    /// The same operation again (pure): a finished one is reported again, an open one continues from its last attempt.
    func resumed(_ operation: OperationStore.Operation, attempts: [OperationStore.Attempt], transport: OperationProtocol.Transport,
                 clock: BatchClock) -> PlanDecision {
        switch operation.state {
        case .succeeded, .failed: return .plan(.finished(operation))
        case .needsReview: return .plan(.review(operation))
        case .requested: break
        }
        guard let request = operation.request else { return .plan(.review(operation)) }
        switch Self.resumption(of: request, attempts: attempts, reconcilable: rules.reconcilable(request, transport: transport),
                               maxInconclusiveQueries: maxInconclusiveQueries, clock: clock) {
        case .reviewAsIs:
            return .plan(.review(operation))
        case .review(let code, let reason):
            return .resume(operation, .review(code: code, reason: reason))
        case .wait(let attempt, let until):
            // Until its reconciliation time the request may still be in flight or be processed: querying earlier
            // could see it "not applied" just before it is. The message comes back at that time.
            return .plan(.wait(code: "attempt_open", reason: "attempt \(attempt) of operation \(operation.operationId) may still be in flight", until: until))
        case .sendAgain:
            return .resume(operation, .send(request))
        case .query:
            return .resume(operation, .query(request))
        }
    }

    /// What a requested operation's attempts lead to (pure; ``record(_:_:on:)`` carries it out).
    public enum Resumption: Sendable, Equatable {
        /// The last request may still be in flight until its reconciliation time (`until`, this worker's clock).
        case wait(attempt: Int64, until: Date?)
        /// The last request is known not to have been sent (or applied): a new attempt sends it.
        case sendAgain
        /// Its answer was lost: query the processor first.
        case query
        /// For a person, recorded with `code` and `reason`.
        case review(code: String, reason: String)
        /// For a person as it stands: no request attempt to resume.
        case reviewAsIs
    }

    /// The rule of a resumed operation, on its attempts and the batch's clock: a request open before its
    /// reconciliation time waits; one known not sent is sent again; a lost answer is queried first (a lost refund goes
    /// to review, never resent; so does an operation after `maxInconclusiveQueries` inconclusive queries).
    public static func resumption(
        of request: GatewayOperation, attempts: [OperationStore.Attempt], reconcilable: Bool, maxInconclusiveQueries: Int, clock: BatchClock
    ) -> Resumption {
        guard let last = attempts.last(where: { !isQuery($0.requestType) }) else { return .reviewAsIs }
        switch last.state {
        case .sending where last.reconcileAfter.map { clock.database < $0 } ?? false, .uncertain where last.reconcileAfter.map { clock.database < $0 } ?? false:
            return .wait(attempt: last.id, until: reconciliationTime(of: last, clock: clock))
        case .notSent:
            return .sendAgain
        case .completed:
            // Its answer was written in the transaction that ended the operation: a requested operation with a
            // completed attempt was changed by something else.
            return .review(code: "operation_state_unexpected", reason: "a requested operation whose last attempt completed")
        case .sending, .uncertain:
            guard reconcilable else {
                return .review(code: "refund_outcome_unknown", reason: "refund attempt \(last.id): answer lost, never resent automatically")
            }
            let inconclusive = attempts.filter { isQuery($0.requestType) && $0.id > last.id && $0.outcome == "inconclusive" }.count
            if inconclusive >= maxInconclusiveQueries {
                return .review(code: "reconciliation_inconclusive",
                               reason: "\(inconclusive) status queries could not tell whether the \(request.name) took effect")
            }
            return .query
        }
    }

    /// When `attempt` may be reconciled, on this worker's clock: its `reconcile_after` as far ahead of the batch's
    /// database time as it is (the two clocks may differ).
    public static func reconciliationTime(of attempt: OperationStore.Attempt, clock: BatchClock) -> Date? {
        attempt.reconcileAfter.map(clock.local)
    }

    /// The status query reconciling a lost answer, as its attempt is recorded: the name its connector declares
    /// (``OperationProtocol/Transport/RequestNames/query``, docs/connectors.md).
    static func queryType(_ transport: OperationProtocol.Transport) -> String { transport.requestNames.query }

    /// How `request` is stored for a merchant of `transport`: under its processor's name, as a settlement update or not.
    static func stored(_ request: GatewayOperation, _ transport: OperationProtocol.Transport) -> OperationStore.StoredForm {
        OperationStore.StoredForm(requestType: transport.requestNames.name(of: request), updatesSettlement: transport.operations == .settlementUpdates)
    }

    /// Whether an attempt is a status query, by the name it was stored under: a query name some connector declares.
    static func isQuery(_ requestType: String) -> Bool { ConnectorRegistry.queryRequestNames.contains(requestType) }

    /// What the gateway said to an operation's request.
    public enum Answer: Sendable, Equatable {
        /// Error code 0: it took effect. `transactionReference`: a refund's own.
        case confirmed(transactionReference: String?)
        /// Refused (a non-zero error code, `gateway_<errorcode>`, or a local refusal before any call): nothing changed
        /// at the gateway; the operation fails with `code`.
        case refused(code: String, message: String)
        /// Known not to have been sent (refused before sending, connection failed): may be sent again.
        case notSent(code: String, reason: String)
        /// May or may not have taken effect: reconciled before anything else.
        case uncertain(code: String, reason: String)
    }

    /// The operation after its answer was recorded, and whether it ended.
    public enum Settled: Sendable, Equatable {
        case finished(OperationStore.Operation)
        case review(OperationStore.Operation)
        /// Still `requested`: retry later (a new attempt, or a status query first), at `until` (this worker's clock)
        /// when that time is known (a lost answer is queried at its attempt's reconciliation time).
        case retry(code: String, reason: String, until: Date? = nil)
    }

    /// Records the answer to `attempt` and ends the operation when it is final. Locks the payment first. A round of one
    /// (``settle(_:actor:clock:on:)``).
    public func settle(
        _ operation: OperationStore.Operation, attempt: Int64, answer: Answer, transport: OperationProtocol.Transport = ConnectorRegistry.fallbackOperationTransport, actor: String,
        clock: BatchClock? = nil, on transaction: PostgresConnection
    ) throws -> Settled {
        try settle([Answering(operation: operation, attempt: attempt, answer: answer, transport: transport)], actor: actor, clock: clock,
                   on: transaction).settled[0]
    }

    /// One answer of a round: the operation as planned, the attempt it answers, and its merchant's transport.
    public struct Answering: Sendable {
        public let operation: OperationStore.Operation
        public let attempt: Int64
        public let answer: Answer
        public let transport: OperationProtocol.Transport

        public init(operation: OperationStore.Operation, attempt: Int64, answer: Answer, transport: OperationProtocol.Transport) {
            (self.operation, self.attempt, self.answer, self.transport) = (operation, attempt, answer, transport)
        }
    }

    /// One status query of a round, reconciling a lost answer: the operation as planned, the query's own attempt, and
    /// what the processor said (or why it could not be asked).
    public struct Querying: Sendable {
        public let operation: OperationStore.Operation
        public let query: Int64
        public let evidence: Result<OperationProtocol.Evidence, OperationQueryFailure>

        public init(operation: OperationStore.Operation, query: Int64, evidence: Result<OperationProtocol.Evidence, OperationQueryFailure>) {
            (self.operation, self.query, self.evidence) = (operation, query, evidence)
        }
    }

    /// A round's answers and status queries as recorded, each in order, and the payments read under the round's locks
    /// (what their reports need).
    public struct Round: Sendable {
        public let settled: [Settled]
        public let reconciled: [Settled]
        public let payments: [UUID: PaymentRecord]
    }

    /// Records a round's answers and status queries set-based: the payments locked and read in one statement, the
    /// operations, the lost attempts of uncertain answers and the attempts of the queried operations in one each, every
    /// answer and query decided on those rows (``decide(_:current:money:lost:clock:)``,
    /// ``decide(_:current:money:attempts:)``, pure), then one write per table (``apply(_:actor:on:)``). Any answer or
    /// successful query whose operation is no longer `requested` throws ``OperationStore/NotCurrent`` and nothing of the
    /// round is kept.
    public func settle(_ answers: [Answering], queries: [Querying] = [], actor: String, clock: BatchClock?, on transaction: PostgresConnection) throws -> Round {
        guard !answers.isEmpty || !queries.isEmpty else { return Round(settled: [], reconciled: [], payments: [:]) }
        let operations = answers.map(\.operation) + queries.map(\.operation)
        let locked = try PaymentStore().lock(Array(Set(operations.compactMap(\.paymentId))), on: transaction)
        let current = try store.load(operations.map(\.id), on: transaction)
        let uncertain = answers.filter { if case .uncertain = $0.answer { true } else { false } }.map(\.attempt)
        let lost = try store.attempts(ids: uncertain, on: transaction)
        let found = queries.filter { if case .success = $0.evidence { true } else { false } }.map(\.operation.id)
        let attempts = try store.attempts(operations: found, on: transaction)
        let clock = try uncertain.isEmpty ? clock : (clock ?? BatchClock.read(transaction))
        let money = { (operation: OperationStore.Operation) in operation.paymentId.flatMap { locked[$0]?.money } }
        let decisions = try answers.map { answering in
            try decide(answering, current: current[answering.operation.id], money: money(answering.operation), lost: lost[answering.attempt], clock: clock)
        }
        let queried = try queries.map { querying in
            try decide(querying, current: current[querying.operation.id], money: money(querying.operation), attempts: attempts[querying.operation.id] ?? [])
        }
        let written = try apply(decisions + queried, actor: actor, on: transaction)
        let settled = { (decision: Decision, operation: OperationStore.Operation) in
            decision.settled(written[decision.operation] ?? current[operation.id] ?? operation)
        }
        return Round(settled: zip(decisions, answers).map { settled($0, $1.operation) },
                     reconciled: zip(queried, queries).map { settled($0, $1.operation) }, payments: locked.mapValues(\.record))
    }

    /// What the rows read under a round's locks say to write for one answer, and what it leads to.
    public struct Decision: Sendable, Equatable {
        public var operation: Int64
        /// The answered attempt's row.
        public var attempt: OperationStore.AttemptWrite?
        /// The request attempt whose answer was lost, as a status query's verdict settles it.
        public var lost: OperationStore.AttemptWrite?
        /// The payment's lifecycle change (a confirmed operation with a lifecycle to move).
        public var lifecycle: PaymentStore.LifecycleChanging?
        /// The operation's end (succeeded, failed) or its review.
        public var ending: OperationStore.Ending?
        public var outcome: Outcome

        public enum Outcome: Sendable, Equatable {
            case finished, review
            case retry(code: String, reason: String, until: Date?)
        }

        public static func == (lhs: Decision, rhs: Decision) -> Bool {
            lhs.operation == rhs.operation && lhs.attempt?.id == rhs.attempt?.id && lhs.attempt?.written == rhs.attempt?.written
                && lhs.lost?.id == rhs.lost?.id && lhs.lost?.written == rhs.lost?.written && lhs.lifecycle == rhs.lifecycle && lhs.ending == rhs.ending && lhs.outcome == rhs.outcome
        }

        func settled(_ operation: OperationStore.Operation) -> Settled {
            switch outcome {
            case .finished: .finished(operation)
            case .review: .review(operation)
            case .retry(let code, let reason, let until): .retry(code: code, reason: reason, until: until)
            }
        }
    }

    /// The rule of an answer (pure): on the operation and its payment's money state as read under the payment's lock
    /// (`current`, `money`), the lost attempt of an uncertain answer and the batch's clock. Throws
    /// ``OperationStore/NotCurrent`` when the operation is no longer `requested` (another consumer settled it).
    public func decide(
        _ answering: Answering, current: OperationStore.Operation?, money: PaymentStore.MoneyState?, lost: OperationStore.Attempt?, clock: BatchClock?
    ) throws -> Decision {
        guard let current, current.state == .requested else { throw OperationStore.NotCurrent(attemptId: answering.attempt) }
        var decision = Decision(operation: current.id, outcome: .finished)
        switch answering.answer {
        case .confirmed(let reference):
            decision.attempt = (answering.attempt, .init(state: .completed, outcome: "succeeded", errorCode: "0", transactionReference: reference))
            try Self.confirmation(current, gatewayReference: reference, money: money, into: &decision)
        case .refused(let code, let message):
            decision.attempt = (answering.attempt, .init(state: .completed, outcome: "refused", errorCode: code, errorMessage: message))
            decision.ending = .init(operation: current.id, state: .failed, code: code, reason: message)
        case .notSent(let code, let reason):
            decision.attempt = (answering.attempt, .init(state: .notSent, outcome: "not_sent", errorCode: code, errorMessage: reason))
            decision.outcome = .retry(code: code, reason: reason, until: nil)
        case .uncertain(let code, let reason):
            decision.attempt = (answering.attempt, .init(state: .uncertain, outcome: "uncertain", errorCode: code, errorMessage: reason))
            guard let request = current.request, rules.reconcilable(request, transport: answering.transport) else {
                decision.ending = .init(operation: current.id, state: .needsReview, code: "refund_outcome_unknown",
                                        reason: "refund answer lost (\(code)): never resent automatically")
                decision.outcome = .review
                return decision
            }
            let queried = answering.transport.isConnector ? "the processor is queried" : "the AUTH is queried"
            decision.outcome = .retry(code: "reconciliation_pending", reason: "\(current.requestType ?? request.name) answer lost (\(code)): \(queried) before anything else",
                                      until: clock.flatMap { clock in lost.flatMap { Self.reconciliationTime(of: $0, clock: clock) } })
        }
        return decision
    }

    /// The rule of a confirmed operation (pure): the payment's lifecycle moves to the decided effect when the payment
    /// still has the state decided on (status `authorized`, lifecycle and amounts as before; the edge checked by
    /// ``CheckedLifecycleChange``), and the operation succeeds; otherwise it goes to review and nothing moves.
    static func confirmation(
        _ operation: OperationStore.Operation, gatewayReference: String?, money: PaymentStore.MoneyState?, into decision: inout Decision
    ) throws {
        // The settle status a settlement update sets is the payment's once it is confirmed.
        let settle = operation.updatedSettleStatus
        let unexpected = OperationStore.Ending(operation: operation.id, state: .needsReview, code: "operation_state_unexpected",
                                               reason: "the gateway confirmed the operation but the payment's lifecycle changed meanwhile")
        guard operation.state == .requested, let paymentId = operation.paymentId, let effect = operation.effect else {
            (decision.ending, decision.outcome) = (unexpected, .review)
            return
        }
        if let before = operation.before {
            let change = try CheckedLifecycleChange(from: before, to: effect.lifecycle)
            guard let money, money.status == .authorized, let now = money.lifecycle, now.status == before.status,
                  now.capturedAmount == before.capturedAmount, now.refundedAmount == before.refundedAmount else {
                (decision.ending, decision.outcome) = (unexpected, .review)
                return
            }
            decision.lifecycle = PaymentStore.LifecycleChanging(
                paymentId: paymentId, change: change, settleStatus: settle, operationId: operation.operationId,
                detail: "\(operation.kind.rawValue) \(operation.operationId): \(effect.event.rawValue) \(effect.amount)")
        }
        decision.ending = .init(operation: operation.id, state: .succeeded, gatewayReference: gatewayReference, code: nil, reason: nil)
        decision.outcome = .finished
    }

    /// A stale decision: the rows written differ from those decided on under the locks (never expected; the round's
    /// transaction rolls back and its messages are retried).
    public struct Diverged: Error, CustomStringConvertible {
        public let table: String
        public var description: String { "the round's \(table) changed after they were read under the locks" }
    }

    /// Carries out a round's decisions, one statement per table: the attempts, the payments' lifecycles (audited), the
    /// operations; then reads back the operations that ended or went to review, by id.
    func apply(_ decisions: [Decision], actor: String, on transaction: PostgresConnection) throws -> [Int64: OperationStore.Operation] {
        try store.finishAttempts(decisions.compactMap(\.attempt) + decisions.compactMap(\.lost), on: transaction)
        let changes = decisions.compactMap(\.lifecycle)
        guard try PaymentStore().changeLifecycles(changes, actor: actor, on: transaction).count == changes.count else {
            throw Diverged(table: "payments")
        }
        let endings = decisions.compactMap(\.ending)
        guard try store.end(endings, on: transaction).count == endings.count else { throw Diverged(table: "operations") }
        return try store.load(endings.map(\.operation), on: transaction)
    }

    /// Records a status query of the AUTH for a lost answer and acts on what it shows: took effect
    /// (the operation succeeds, never resent), not applied (the last attempt becomes `not_sent`: a new one may send),
    /// inconclusive (query again later, then review), or review.
    public func reconciled(
        _ operation: OperationStore.Operation, query: Int64, queried: OperationProtocol.QueriedAuth?, actor: String, on transaction: PostgresConnection
    ) throws -> Settled {
        try reconciled(operation, query: query, evidence: .settlement(queried), actor: actor, on: transaction)
    }

    /// ``reconciled(_:query:queried:actor:on:)`` for any connector's status query (``OperationProtocol/Evidence``): a
    /// round of one (``settle(_:queries:actor:clock:on:)``).
    public func reconciled(
        _ operation: OperationStore.Operation, query: Int64, evidence: OperationProtocol.Evidence, actor: String, on transaction: PostgresConnection
    ) throws -> Settled {
        try settle([], queries: [Querying(operation: operation, query: query, evidence: .success(evidence))], actor: actor, clock: nil,
                   on: transaction).reconciled[0]
    }

    /// The rule of a status query (pure), on the operation, its payment's money state and its attempts as read under
    /// the round's locks: took effect (the lost attempt completes, the operation succeeds as a confirmed answer would,
    /// never resent), not applied (the lost attempt becomes `not_sent`: a new attempt may send), inconclusive (query
    /// again later, then review), or review. A query that failed only records itself inconclusive. Throws
    /// ``OperationStore/NotCurrent`` when a found operation is no longer `requested`.
    public func decide(
        _ querying: Querying, current: OperationStore.Operation?, money: PaymentStore.MoneyState?, attempts: [OperationStore.Attempt]
    ) throws -> Decision {
        let evidence: OperationProtocol.Evidence
        switch querying.evidence {
        case .failure(let failure):
            return Decision(operation: querying.operation.id,
                            attempt: (querying.query, .init(state: .completed, outcome: "inconclusive", errorCode: failure.code, errorMessage: failure.reason)),
                            outcome: .retry(code: "reconciliation_inconclusive", reason: "status query failed: \(failure.code): \(failure.reason)", until: nil))
        case .success(let found):
            evidence = found
        }
        guard let current, current.state == .requested, let request = current.request, let effect = current.effect else {
            throw OperationStore.NotCurrent(attemptId: querying.query)
        }
        let verdict = rules.reconcile(request, before: current.before ?? effect.lifecycle, effect: effect, evidence: evidence)
        var queried: OperationProtocol.QueriedAuth?
        if case .payment(let shown?) = evidence { queried = shown.settlement }
        let outcome = switch verdict {
        case .tookEffect: "took_effect"
        case .notApplied: "not_applied"
        case .inconclusive: "inconclusive"
        case .review: "review"
        }
        var decision = Decision(operation: current.id, attempt: (querying.query, .init(
            state: .completed, outcome: outcome, errorCode: verdict.code, settleStatus: queried?.settleStatus.storedCode,
            settleBaseAmount: queried?.settleBaseAmount)), outcome: .finished)
        let lost = attempts.last { $0.id != querying.query && !Self.isQuery($0.requestType) && ($0.state == .sending || $0.state == .uncertain) }
        switch verdict {
        case .tookEffect:
            decision.lost = lost.map { ($0.id, .init(state: .completed, outcome: "succeeded", errorMessage: "confirmed by status query \(querying.query)")) }
            // The transaction the query found (a capture's id is what a later refund references, at a processor that
            // refunds captures).
            try Self.confirmation(current, gatewayReference: rules.transactionId(request, evidence: evidence), money: money, into: &decision)
        case .notApplied:
            decision.lost = lost.map { ($0.id, .init(state: .notSent, outcome: "not_applied", errorMessage: "status query \(querying.query): not applied")) }
            decision.outcome = .retry(code: "operation_not_applied", reason: "the status query shows the update was not applied: a new attempt sends it",
                                      until: nil)
        case .inconclusive(let code, let reason):
            decision.outcome = .retry(code: code, reason: reason, until: nil)
        case .review(let code, let reason):
            decision.ending = .init(operation: current.id, state: .needsReview, code: code, reason: reason)
            decision.outcome = .review
        }
        return decision
    }
}
