import Foundation
import HTTP
import JWT
import Pipeline
import Postgres

/// Stage 3: prepared payment → one AUTH at the gateway → terminal status → hand-off to notification.
///
/// Exactly-once charging rests on three rules:
/// 1. Before the call, an attempt row `sending` and `prepared → submitting` are committed in their own transaction,
///    so a crash at any later point leaves evidence that an AUTH may be on the wire. No transaction is open during
///    the call.
/// 2. After the call, the outcome and the terminal status are committed together (and with them the card-data purge,
///    by the `payments_terminal_purge` trigger).
/// 3. A payment found `submitting` (a redelivery after a crash, or after an uncertain answer) is never sent again
///    blindly: once the attempt's reconciliation time has passed on the database clock (its send deadline, after
///    which the send gate never lets its bytes leave, plus the total timeout and a margin), the connector's status query by the
///    attempt's own per-payment reference decides. A matching AUTH is adopted; only a confirmed "no such
///    transaction" lets the AUTH be resent (`submitting → prepared`); too many inconclusive queries end in
///    `needs_review`. Only the payment's current attempt is ever settled.
///
/// Every decision is ``SubmitDecision``'s (pure: ``SubmitProtocol`` per payment, on the batch read as data, the
/// database's time read once per batch); this type reads, carries the decisions out and applies them, one path for any
/// batch size, inside the runtime's batch shape (``CallingStageHandler``: prepare, call out through the pool and the
/// endpoint gate within the send window, record).
///
/// No AUTH is sent after the payment deadline (`deadline_exceeded`). Waiting and retrying use the runtime's delayed
/// retry tiers (``StageFailure/transient(code:reason:)``), so a gateway outage parks work in the retry queues.
public struct SubmitStage: CallingStageHandler {
    public let stage = Stage.submit
    /// The `actor` of the stage's audit events.
    static let actor = "submit"
    private let directory: MerchantDirectory
    let requests: GatewayRequestStore
    /// The merchant's connector is chosen per call by its endpoint (``GatewayConnectors``).
    private let client: any GatewayConnector
    private let clock: @Sendable () -> Date
    /// The worker's gateway-call threads (keep-alive clients, shared by the lanes) and the call-out gate: a circuit per
    /// gateway endpoint (URL), and `merchantConcurrency` call slots per merchant, so a merchant whose gateway is slow
    /// cannot occupy every thread. A round's AUTHs leave only within its send window; at most three rounds a batch
    /// (query, not found → send; a third would mean the gateway contradicts itself).
    public let callOut: CallOut
    public var gate: EndpointGate { callOut.gate }
    private let payments = PaymentStore()
    private let attempts = GatewayAttemptStore()
    /// An authorised storing payment's credential (sealed under the same data key as the requests).
    private var credentialRecording: StoredCredentialRecording {
        StoredCredentialRecording(credentials: CredentialStore(vault: requests.vault), cardData: CardDataStore(vault: requests.vault))
    }
    let machine: SubmitProtocol
    /// Seconds added to an endpoint's total timeout after an attempt's send deadline before it is queried
    /// (`PAYPIPE_RECONCILE_GRACE`): an AUTH may still be in flight in the gateway or at the acquirer for a while.
    private let reconcileGrace: Double
    /// Seconds after its attempt is committed after which an AUTH is not sent any more (`PAYPIPE_SEND_WINDOW`): the
    /// attempt's send deadline, which the call-out's send window enforces.
    private let sendWindow: Double
    /// The stage's own series, `paypipe_late_answers_total` (``lateAnswersMetric``): registered when the runtime
    /// attaches the worker's registry (the launch file's `attach(metrics:)`); nothing is counted before.
    let metrics = AttachedMetrics()
    static let lateAnswersMetric = "paypipe_late_answers_total"

    /// The stage with its protocol, timings and call-out; the launch file builds them from the stage's settings
    /// (``init(directory:requests:client:settings:clock:)``).
    init(
        directory: MerchantDirectory, requests: GatewayRequestStore, client: any PaymentGateway, machine: SubmitProtocol,
        reconcileGrace: Double, sendWindow: Double, callOut: CallOut, clock: @escaping @Sendable () -> Date
    ) {
        self.machine = machine
        self.directory = directory
        self.requests = requests
        self.client = client
        self.reconcileGrace = reconcileGrace
        self.sendWindow = sendWindow
        self.clock = clock
        self.callOut = callOut
    }

    public func spanAttributes(of message: StageMessage) -> [SpanAttribute] { message.spanAttributes }

    public func decode(_ message: InboundMessage) throws(StageFailure) -> StageMessage {
        try StageMessage.decode(message.body)
    }

    // MARK: The batch shape's steps

    /// Prepare: the batch read (``SubmitPlanStatement/lockAndRead(_:legacySettleSeconds:requests:on:)``), the decisions
    /// (``SubmitDecision/plan(_:locked:now:gateways:machine:)``), and their application: the sends and the endings in
    /// one statement each; a `sending` attempt is committed before its AUTH.
    public func prepare(_ batch: [StageMessage], window: SendWindow?, transaction: PostgresConnection) throws -> [Prepared<Call>] {
        let read = try lock(batch.map(\.paymentId), transaction: transaction)
        let endpoints = try endpoints(for: read.rows, transaction: transaction)
        let plans = SubmitDecision.plan(batch.map(\.paymentId), locked: read.locked, now: read.now,
                                        gateways: endpoints.mapValues(\.gateway), machine: machine)
        return try apply(plans, batch, read: read, endpoints: endpoints, transaction: transaction)
    }

    /// Record: the decisions on every answer (``SubmitDecision/record(_:locked:now:machine:)``) and their application:
    /// every kind of write (endings, reviews, status queries' records, uncertain or unsent attempts, re-armed payments,
    /// evidence) in one statement each, for any batch size. An AUTH's answer is first decided on the state the
    /// prepare left (its payment `submitting`, its attempt current), which the ending statement re-checks in SQL under
    /// the row locks; every other answer, and any ending the statement did not apply, is decided on the batch read
    /// again under the same locks (``SubmitPlanStatement/lockAndRead(_:legacySettleSeconds:requests:on:)``). One decide and
    /// one apply either way.
    public func record(_ answers: [Answered<StageMessage, Call, Answer>], observed: Void, transaction: PostgresConnection) throws -> [Recorded] {
        var recorded = [Recorded?](repeating: nil, count: answers.count)
        var assumed: [UUID: SubmitDecision.Locked] = [:]
        for answered in answers {
            guard case .send(let attemptId, _, _, _) = answered.call else { continue }
            assumed[answered.message.paymentId] = SubmitDecision.Locked(
                status: .submitting, firstReceivedAt: .distantPast,
                latest: SubmitProtocol.Attempt(id: attemptId, state: .sending, reconcileAfter: .distantFuture))
        }
        let optimistic = SubmitDecision.record(answers.map(Self.decisionInput), locked: assumed, now: .distantPast, machine: machine)
        let ending = answers.indices.filter { index in
            if case .end? = optimistic[index] { return true }
            return false
        }
        let ended = try apply(ending.map { optimistic[$0] }, ending.map { answers[$0] }, rows: [:], transaction: transaction)
        for (offset, index) in ending.enumerated() { recorded[index] = ended[offset] }
        let rest = answers.indices.filter { recorded[$0] == nil }
        guard !rest.isEmpty else { return recorded.map { $0! } }
        let read = try lock(rest.map { answers[$0].message.paymentId }, transaction: transaction)
        let decisions = SubmitDecision.record(rest.map { Self.decisionInput(answers[$0]) }, locked: read.locked, now: read.now, machine: machine)
        for (offset, result) in try apply(decisions, rest.map { answers[$0] }, rows: read.rows, transaction: transaction).enumerated() {
            // Under the batch's row locks an ending decided on the fresh read always applies.
            recorded[rest[offset]] = result ?? .failed(.transient(
                code: "attempt_superseded", reason: "AUTH attempt \(answers[rest[offset]].call.attempt.id) is no longer the payment's current attempt"))
        }
        return recorded.map { $0! }
    }

    private static func decisionInput(_ answered: Answered<StageMessage, Call, Answer>) -> SubmitDecision.Answered {
        SubmitDecision.Answered(paymentId: answered.message.paymentId, attemptId: answered.call.attempt.id, answer: answered.answer)
    }

    /// A permanent failure ends the payment `failed` (purged, notified), or `needs_review` if an AUTH may be out
    /// (``Pipeline/PaymentStore/Failing``), unless it is already terminal (a redelivery); hands it to notification
    /// either way. The payment is read under its row lock first (``SubmitPlanStatement/lockPayment(_:on:)``).
    public func recordFailure(_ failure: PermanentFailure, for message: StageMessage, transaction: PostgresConnection) throws -> StageOutcome? {
        guard let payment = try SubmitPlanStatement.lockPayment(failure.subject, on: transaction) else { throw unknown(failure.subject) }
        if !payment.status.isTerminal {
            _ = try payments.fail([PaymentStore.Failing(
                paymentId: payment.id, from: payment.status, rejection: Rejection(code: failure.code, reason: failure.reason))], on: transaction)
        }
        return .handOff(to: .notify, payment.message)
    }

    public func unsettled(_ message: StageMessage) -> StageFailure {
        .transient(code: "gateway_inconsistent", reason: "payment \(message.paymentId) did not settle after repeated rounds")
    }

    /// A call the prepare step decided: an AUTH with its `sending` attempt committed, or a status query of an attempt.
    public enum Call: Sendable {
        case send(attemptId: Int64, request: GatewayRequest, endpoint: GatewayEndpoint, reference: String)
        /// `suspended`: the AUTH asked to be suspended (manual capture), so a record with settle status 2 is authorised.
        case query(attemptId: Int64, reference: String, endpoint: GatewayEndpoint, expected: TransactionQueryResult.Expected, suspended: Bool)

        var endpoint: GatewayEndpoint {
            switch self {
            case .send(_, _, let endpoint, _), .query(_, _, let endpoint, _, _): endpoint
            }
        }

        var attempt: (id: Int64, reference: String) {
            switch self {
            case .send(let id, _, _, let reference), .query(let id, let reference, _, _, _): (id, reference)
            }
        }
    }

    public typealias Answer = SubmitProtocol.Answer

    /// Per merchant (its call slots) and per endpoint (its circuit); only an AUTH is bound by the send window.
    public func gating(_ call: Call, for message: StageMessage) -> GatedCall {
        var windowed = false
        if case .send = call { windowed = true }
        return GatedCall(EndpointGate.Call(endpoint: call.endpoint.url, owner: message.merchantId), windowed: windowed)
    }

    /// A call held back was not made: an AUTH is certainly not sent; a query asked nothing and spends no query budget.
    public func heldBack(_ call: Call, for message: StageMessage, because reason: HeldBack) -> Answer {
        let (code, detail): (String, String)
        switch reason {
        case .gate(let refusal): (code, detail) = GatewayCall.heldBack(refusal, merchantId: message.merchantId, slots: gate.policy.maxConcurrent)
        case .sendWindow(let refusal):
            // The same answer as the send gate's refusal at connect time (``GatewayResult/notAnswered(_:)``).
            if case .send = call { return .sent(.notAnswered(.refusedBeforeSending(refusal))) }
            (code, detail) = ("paypipe.send_window", "not sent: \(refusal)")
        }
        if case .send = call { return .sent(.local(.transient, code: code, message: detail)) }
        return .notAsked(code: code, reason: detail)
    }

    /// The call, on a pool thread holding the merchant's slot.
    public func perform(_ call: Call, for message: StageMessage, window: SendWindow?, client: HTTPClient) -> (answer: Answer, report: CallReport) {
        switch call {
        case .send(let attemptId, let request, let endpoint, let reference):
            let result = CaptureSuspension.result(self.client.authorize(
                request, reference: reference, endpoint: endpoint, requestId: "A\(attemptId)", now: clock(), window: window, using: client),
                asked: CaptureSuspension.asksSuspension(request))
            return (.sent(result), GatewayCall.report(result.errorCode))
        case .query(let attemptId, let reference, let endpoint, let expected, let suspended):
            var result = self.client.find(
                reference: reference, endpoint: endpoint, expected: expected, requestId: "Q\(attemptId)", now: clock(), using: client)
            if case .found(let found) = result { result = .found(CaptureSuspension.result(found, asked: suspended)) }
            if case .inconclusive(let code, _) = result { return (.queried(result), GatewayCall.report(code)) }
            return (.queried(result), .healthy)
        }
    }

    /// Seconds from an attempt's send deadline to its reconciliation: the total timeout of the endpoint's transport
    /// plus the margin (the `webservices` transport has no `exp`, so this wait is all that bounds its AUTH).
    private func settleSeconds(_ endpoint: GatewayEndpoint) -> Double { client.totalTimeout(for: endpoint) + reconcileGrace }

    /// An attempt written before migration 5 has no reconciliation time: the old rule (start + timeout + grace), with
    /// the jwt transport's timeout, the only transport there was then.
    var legacySettleSeconds: Double { client.totalTimeout + reconcileGrace }

    /// The batch read, under the batch's row locks.
    private func lock(_ ids: [UUID], transaction: PostgresConnection) throws -> SubmitPlanStatement.Read {
        try SubmitPlanStatement.lockAndRead(ids, legacySettleSeconds: legacySettleSeconds, requests: requests, on: transaction)
    }

    /// A payment's gateway as the decisions see it, and its endpoint when it has one.
    private struct Resolved {
        let endpoint: GatewayEndpoint?
        let gateway: SubmitProtocol.Gateway
    }

    /// The endpoint of every payment that may call out (`prepared`, `submitting`): the merchant's configuration, with
    /// the attempt's own site for a status query (it goes where the AUTH went, not to today's configuration).
    private func endpoints(for rows: [UUID: SubmitPlanStatement.Row], transaction: PostgresConnection) throws -> [UUID: Resolved] {
        var resolved: [UUID: Resolved] = [:]
        /// Per merchant and site: one merchant read for the batch, whatever its size.
        var known: [String: Resolved] = [:]
        for (id, row) in rows where row.payment.status == .prepared || row.payment.status == .submitting {
            let site = row.payment.status == .submitting ? row.siteReference : nil
            let key = "\(row.payment.merchantId)\u{0}\(site ?? "")"
            if let cached = known[key] {
                resolved[id] = cached
                continue
            }
            do {
                resolved[id] = try resolve(row.payment, site: site, transaction: transaction)
            } catch StageFailure.permanent(let failure) {
                resolved[id] = Resolved(endpoint: nil, gateway: .notConfigured(failure.reason))
            }
            known[key] = resolved[id]
        }
        return resolved
    }

    /// Carries the planning decisions out: the sends (``SubmitPlanStatement/begin(_:sendWindow:on:)``) and the endings
    /// (``Pipeline/PaymentStore/fail(_:on:)``) and the re-arms (`submitting → prepared` when an attempt record went
    /// missing) in one statement each, for any batch size.
    private func apply(
        _ plans: [SubmitDecision.Planned], _ batch: [StageMessage], read: SubmitPlanStatement.Read, endpoints: [UUID: Resolved],
        transaction: PostgresConnection
    ) throws -> [Prepared<Call>] {
        var prepared = [Prepared<Call>?](repeating: nil, count: batch.count)
        var sends: [(index: Int, request: GatewayRequest, endpoint: GatewayEndpoint, reference: String)] = []
        var endings: [(index: Int, failing: PaymentStore.Failing)] = []
        var rearms: [PaymentStore.Transitioning] = []
        for (index, plan) in plans.enumerated() {
            let message = batch[index]
            guard case .plan(let plan, let snapshot) = plan, let row = read.rows[message.paymentId] else { continue }
            let payment = row.payment
            switch plan {
            case .handOff:
                prepared[index] = .finished(.handOff(to: .notify, payment.message))
            case .wait(let code, let reason, let until):
                // A wait whose end is known is re-driven then (the database's time, as this worker's clock reads it).
                guard let until else {
                    prepared[index] = .failed(.transient(code: code, reason: "payment \(payment.id): \(reason)"))
                    continue
                }
                prepared[index] = .failed(.waiting(code: code, reason: "payment \(payment.id): \(reason)", until: until, decidedAt: snapshot.now, now: clock()))
            case .end(let status, let code, let detail):
                let failing = try PaymentStore.Failing(paymentId: payment.id, from: payment.status, rejection: Rejection(code: code, reason: detail))
                precondition(failing.checked.to == status, "the protocol ends a payment where the store's failure rule does")
                endings.append((index, failing))
            case .send:
                guard let request = row.request, let endpoint = endpoints[payment.id]?.endpoint else {
                    preconditionFailure("the protocol sends only with a request and an endpoint")
                }
                sends.append((index, CaptureSuspension.request(request, mode: payment.captureMode, connector: endpoint.connector), endpoint,
                              GatewayOrderReference.forPayment(merchantReference: request.orderReference, paymentId: payment.id)))
            case .query(let attemptId):
                guard let endpoint = endpoints[payment.id]?.endpoint, let reference = row.orderReference else {
                    preconditionFailure("the protocol queries only an attempt with an endpoint")
                }
                prepared[index] = .call(.query(
                    attemptId: attemptId, reference: reference, endpoint: endpoint,
                    expected: TransactionQueryResult.Expected(amountMinor: payment.amountMinor, currency: payment.currency, orderReference: reference),
                    suspended: payment.captureMode == .manual))
            case .rearm(let detail):
                rearms.append(try PaymentStore.Transitioning(paymentId: payment.id, from: .submitting, to: .prepared, detail: detail))
                prepared[index] = .failed(.transient(code: "attempt_missing", reason: "payment \(payment.id) was submitting: \(detail)"))
            }
        }
        let attemptIds = try SubmitPlanStatement.begin(sends.map {
            SubmitPlanStatement.Send(paymentId: batch[$0.index].paymentId, orderReference: $0.reference,
                                     requestType: $0.request.requestTypes.joined(separator: ","), siteReference: $0.endpoint.siteReference,
                                     settleSeconds: settleSeconds($0.endpoint))
        }, sendWindow: sendWindow, on: transaction)
        for send in sends {
            // Under the batch's row locks every `prepared` payment read moves.
            guard let attemptId = attemptIds[batch[send.index].paymentId] else { preconditionFailure("a locked prepared payment did not move") }
            prepared[send.index] = .call(.send(attemptId: attemptId, request: send.request, endpoint: send.endpoint, reference: send.reference))
        }
        _ = try payments.fail(endings.map(\.failing), on: transaction)
        try payments.transitionBatch(rearms, actor: Self.actor, on: transaction)
        for ending in endings { prepared[ending.index] = .finished(.handOff(to: .notify, batch[ending.index])) }
        return plans.indices.map { index in
            switch plans[index] {
            case .unknown: return .failed(unknown(batch[index]))
            case .handOff: return .finished(.handOff(to: .notify, batch[index]))
            case .inFlight:
                return .failed(.transient(code: "awaiting_reconciliation",
                                          reason: "payment \(batch[index].paymentId): an attempt of this batch is in flight"))
            case .sameAs(let first): return prepared[first]!
            case .plan: return prepared[index]!
            }
        }
    }

    /// Carries the recording decisions out, set-based for any batch size: the endings
    /// (``SubmitRecordStatement/finish(_:on:)``), the reviews (``Pipeline/PaymentStore/fail(_:on:)``), the status
    /// queries' own records, the attempts left uncertain or not sent, the payments re-armed, and late evidence: one
    /// statement each, whatever the mix. `rows`: what the batch read found (empty when the decisions were taken on the
    /// state the prepare left: they are then all endings, whose statement re-checks it). An ending the statement did
    /// not apply stays `nil`, to be decided again on a fresh read.
    private func apply(
        _ decisions: [SubmitProtocol.Record?], _ answers: [Answered<StageMessage, Call, Answer>], rows: [UUID: SubmitPlanStatement.Row],
        transaction: PostgresConnection
    ) throws -> [Recorded?] {
        var recorded = [Recorded?](repeating: nil, count: answers.count)
        var writes = RecordWrites()
        for (index, decision) in decisions.enumerated() {
            let answered = answers[index]
            if case .end(let result, let terminal)? = decision {
                writes.endings.append((index, SubmitRecordStatement.Ending(
                    paymentId: answered.message.paymentId, attemptId: answered.call.attempt.id, result: result, decision: terminal)))
                if case .queried(let query) = answered.answer {
                    writes.queries.append(.init(paymentId: answered.message.paymentId, orderReference: answered.call.attempt.reference, result: query))
                }
                continue
            }
            guard let decision, let payment = rows[answered.message.paymentId]?.payment else {
                recorded[index] = .failed(unknown(answered.message))
                continue
            }
            let (attemptId, reference) = answered.call.attempt
            if case .queried(let result) = answered.answer {
                // Every status query is kept, whatever it leads to; a stale one never counts for a newer attempt.
                var current = true
                if case .evidence = decision { current = false }
                writes.queries.append(.init(paymentId: payment.id, orderReference: reference, result: result, current: current))
            }
            switch decision {
            case .end: preconditionFailure("endings are collected above")
            case .uncertain(let result):
                writes.finishes.append(.init(attemptId, state: .uncertain, result: result))
                recorded[index] = .failed(.transient(code: "gateway_outcome_uncertain", reason: result.failureDetail))
            case .notSent(let result):
                writes.finishes.append(.init(attemptId, state: .notSent, result: result))
                writes.transitions.append(try .init(paymentId: payment.id, from: .submitting, to: .prepared, detail: result.failureDetail))
                // Refused by the send window: re-plan at once (a new attempt, a new window). Otherwise the gateway or
                // this worker is busy: retry later.
                recorded[index] = result.errorCode == "paypipe.send_window" ? .again : .failed(.transient(code: "gateway_unavailable", reason: result.failureDetail))
            case .confirmedAbsent:
                writes.finishes.append(.init(attemptId, state: .notSent,
                                             result: .local(.transient, code: "paypipe.not_found", message: "gateway holds no such transaction")))
                writes.transitions.append(try .init(paymentId: payment.id, from: .submitting, to: .prepared, detail: "gateway confirmed no AUTH"))
                recorded[index] = .again
            case .awaitConfirmation(let found):
                recorded[index] = .failed(.transient(code: "awaiting_confirmation", reason: "\(found) of \(machine.notFoundConfirmations) 'not found' answers"))
            case .inconclusive(_, let code, let reason):
                recorded[index] = .failed(.transient(code: "reconciliation_inconclusive", reason: "\(code): \(reason)"))
            case .review(let count, let code, let reason):
                writes.reviews.append((index, try PaymentStore.Failing(
                    paymentId: payment.id, from: payment.status,
                    rejection: Rejection(code: "reconciliation_inconclusive", reason: "\(count) status queries gave no answer; last: \(code): \(reason)"))))
            case .retry(let code, let reason):
                recorded[index] = .failed(.transient(code: code, reason: reason))
            case .evidence(let result, let lateAuthorization):
                recorded[index] = try evidence(result, lateAuthorization: lateAuthorization, answered, payment: payment, writes: &writes)
            }
        }
        // The status queries first, in batch order: their ids ascend as the answers came, before anything they led to.
        try attempts.recordQueries(writes.queries, on: transaction)
        // A storing payment's credential shows what its card data holds: read before the ending shreds it. Only for
        // answers to a storing request, or adopted from a status query (no request at hand): no statement otherwise.
        let authorizing = writes.endings.filter { ending in
            guard ending.ending.result.outcome == .authorized else { return false }
            switch answers[ending.index].call {
            case .send(_, let request, let endpoint, _): return endpoint.connector.plugin.storesCredential(request)
            case .query: return true
            }
        }
        let storing = try credentialRecording.read(authorizing.map(\.ending.paymentId), on: transaction)
        let ended = writes.endings.isEmpty ? [] : try SubmitRecordStatement.finish(writes.endings.map(\.ending), on: transaction)
        var storingEnded: [(paymentId: UUID, connector: ConnectorKind, result: GatewayResult)] = []
        for (offset, handOff) in ended.enumerated() {
            // Not ended: the payment is no longer `submitting` on this attempt (decided again on a fresh read).
            recorded[writes.endings[offset].index] = handOff.map { .finished(.handOff(to: .notify, $0)) }
            let ending = writes.endings[offset].ending
            if handOff != nil, storing[ending.paymentId] != nil {
                storingEnded.append((ending.paymentId, answers[writes.endings[offset].index].call.endpoint.connector, ending.result))
            }
        }
        try credentialRecording.record(storingEnded, read: storing, on: transaction)
        try attempts.finish(writes.finishes, open: true, on: transaction)
        try attempts.recordEvidence(writes.evidence, on: transaction)
        try payments.transitionBatch(writes.transitions, actor: Self.actor, on: transaction)
        _ = try payments.fail(writes.reviews.map(\.failing), on: transaction)
        for review in writes.reviews { recorded[review.index] = .finished(.handOff(to: .notify, answers[review.index].message)) }
        return recorded
    }

    /// What a batch's answers write besides their decisions' results, gathered so that each kind is one statement.
    private struct RecordWrites {
        var endings: [(index: Int, ending: SubmitRecordStatement.Ending)] = []
        var reviews: [(index: Int, failing: PaymentStore.Failing)] = []
        var queries: [GatewayAttemptStore.Query] = []
        var finishes: [GatewayAttemptStore.Finish] = []
        var evidence: [(attemptId: Int64, result: GatewayResult)] = []
        var transitions: [PaymentStore.Transitioning] = []
    }

    /// An answer for an attempt that is no longer current: kept as evidence on its own attempt.
    private func evidence(
        _ result: GatewayResult?, lateAuthorization: Bool, _ answered: Answered<StageMessage, Call, Answer>, payment: SubmitPlanStatement.Payment,
        writes: inout RecordWrites
    ) throws -> Recorded {
        let attemptId = answered.call.attempt.id
        if case .sent = answered.answer, let result { writes.evidence.append((attemptId, result)) }
        if payment.status.isTerminal {
            metrics.report { $0.increment(Self.lateAnswersMetric, labels: ["stage": "submit", "outcome": result?.outcome.rawValue ?? "none"]) }
        }
        if lateAuthorization {
            // The gateway authorised a payment PayPipe had failed: both facts stay in the audit trail, and the
            // merchant hears `payment.needs_review` (the capture/void issue replaces this with an automatic void).
            writes.transitions.append(try .init(
                paymentId: payment.id, from: .failed, to: .needsReview, errorCode: "late_authorization",
                detail: "AUTH attempt \(attemptId) was authorised after the payment failed: \(result?.failureDetail ?? "")"))
            return .finished(.handOff(to: .notify, payment.message))
        }
        if payment.status.isTerminal { return .finished(.handOff(to: .notify, payment.message)) }
        // A newer attempt (or none) is the payment's business now; this message waits like any other.
        return .failed(.transient(code: "attempt_superseded", reason: "AUTH attempt \(attemptId) is no longer the payment's current attempt"))
    }

    // MARK: Helpers

    private func unknown(_ message: StageMessage) -> StageFailure { unknown(message.paymentId) }

    private func unknown(_ paymentId: UUID) -> StageFailure {
        .unattributable(code: "unknown_payment", reason: "payment \(paymentId) does not exist")
    }

    /// The merchant's endpoint, `site` (an attempt's stored site) replacing the configured site reference, and whether
    /// its circuit lets a call through; a merchant without a usable gateway section is not configured, with why.
    private func resolve(_ payment: SubmitPlanStatement.Payment, site: String?, transaction: PostgresConnection) throws -> Resolved {
        let merchant = try directory.entry(payment.merchantId, on: transaction)?.merchant
        switch GatewayEndpoint.forMerchant(merchant?.config.gateway, secrets: merchant?.secrets, site: site) {
        case .success(let endpoint): return Resolved(endpoint: endpoint, gateway: gate.permits(endpoint.url) ? .ready : .circuitOpen)
        case .failure(let error): return Resolved(endpoint: nil, gateway: .notConfigured("merchant \(payment.merchantId) has \(error.reason)"))
        }
    }
}
