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
///    which the send gate never lets its bytes leave, plus the total timeout and a margin), a TRANSACTIONQUERY by the
///    attempt's own per-payment reference decides. A matching AUTH is adopted; only a confirmed "no such
///    transaction" lets the AUTH be resent (`submitting → prepared`); too many inconclusive queries end in
///    `needs_review`. Only the payment's current attempt is ever settled.
///
/// Every decision is ``SubmitProtocol``'s (a pure value); this type carries them out, set-based for the plain messages
/// of a batch and per message for the rest, inside the runtime's batch shape (``CallingStageHandler``: prepare, call
/// out through the pool and the endpoint gate within the send window, record).
///
/// No AUTH is sent after the payment deadline (`deadline_exceeded`). Waiting and retrying use the runtime's delayed
/// retry tiers (``StageFailure/transient(code:reason:)``), so a gateway outage parks work in the retry queues.
public struct SubmitStage: CallingStageHandler {
    public let stage = Stage.submit
    /// The `actor` of the stage's audit events.
    static let actor = "submit"
    private let directory: MerchantDirectory
    private let requests: GatewayRequestStore
    /// The merchant's connector is chosen per call by its endpoint (``GatewayConnectors``).
    private let client: any GatewayConnector
    private let settings: SubmitSettings
    private let clock: @Sendable () -> Date
    /// The worker's gateway-call threads (keep-alive clients, shared by the lanes) and the call-out gate: a circuit per
    /// gateway endpoint (URL), and `merchantConcurrency` call slots per merchant, so a merchant whose gateway is slow
    /// cannot occupy every thread. A round's AUTHs leave only within its send window; at most three rounds a batch
    /// (query, not found → send; a third would mean the gateway contradicts itself).
    public let callOut: CallOut
    public var gate: EndpointGate { callOut.gate }
    private let payments = PaymentStore()
    private let attempts = GatewayAttemptStore()
    private let machine: SubmitProtocol
    /// The stage's own series (late answers); nil when no registry was given.
    private let metrics: SubmitMetrics?

    public init(
        directory: MerchantDirectory, requests: GatewayRequestStore, client: any PaymentGateway,
        settings: SubmitSettings = SubmitSettings(), clock: @escaping @Sendable () -> Date = { Date() }, registry: MetricsRegistry? = nil
    ) {
        machine = settings.submitProtocol
        metrics = registry.map(SubmitMetrics.init(registry:))
        self.directory = directory
        self.requests = requests
        self.client = client
        self.settings = settings
        self.clock = clock
        callOut = CallOut(
            pool: HTTPClientPool(size: settings.callConcurrency, configuration: client.http, name: "paypipe-submit-call"),
            gate: EndpointGate(
                policy: EndpointGatePolicy(maxConcurrent: settings.merchantConcurrency, failureThreshold: settings.circuitFailureThreshold,
                                           openSeconds: settings.circuitOpenSeconds, maxWait: 1),
                stage: .submit, clock: clock),
            sendWindow: settings.sendWindow, rounds: 3)
    }

    public func decode(_ message: InboundMessage) throws(StageFailure) -> StageMessage {
        try StageMessage.decode(message.body)
    }

    // MARK: The batch shape's steps

    /// Prepare: the plain messages of the batch in two statements (``planInBulk(_:transaction:)``), every other one
    /// per message (``plan(_:transaction:)``), under the same row locks; a `sending` attempt is committed before its AUTH.
    public func prepare(_ batch: [StageMessage], window: SendWindow?, transaction: PostgresConnection) throws -> [Prepared<Call>] {
        let planned = try planInBulk(batch, transaction: transaction)
        return try batch.indices.map { index in
            if let call = planned[index] { return .call(call) }
            return try plan(batch[index], transaction: transaction)
        }
    }

    /// Record: the AUTH answers that end their payment in one statement (``recordInBulk(_:transaction:)``), every
    /// other answer per message (``record(_:transaction:)``).
    public func record(_ answers: [Answered<StageMessage, Call, Answer>], observed: Void, transaction: PostgresConnection) throws -> [Recorded] {
        let settled = try recordInBulk(answers, transaction: transaction)
        return try answers.indices.map { index in try settled[index] ?? record(answers[index], transaction: transaction) }
    }

    /// A permanent failure ends the payment `failed` (purged, notified), or `needs_review` if an AUTH may be out.
    public func recordFailure(_ failure: PermanentFailure, for message: StageMessage, transaction: PostgresConnection) throws -> StageOutcome? {
        .handOff(to: .notify, try payments.recordFailure(PaymentFailure(failure), on: transaction))
    }

    public func unsettled(_ message: StageMessage) -> StageFailure {
        .transient(code: "gateway_inconsistent", reason: "payment \(message.paymentId) did not settle after repeated rounds")
    }

    /// A call the prepare step decided: an AUTH with its `sending` attempt committed, or a status query of an attempt.
    public enum Call: Sendable {
        case send(attemptId: Int64, request: GatewayRequest, endpoint: GatewayEndpoint, reference: String)
        /// `suspended`: the AUTH asked to be suspended (manual capture), so a record with settle status 2 is authorised.
        case query(attemptId: Int64, reference: String, endpoint: GatewayEndpoint, expected: GatewayResponseMapper.Expected, suspended: Bool)

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
        case .gate(let refusal): (code, detail) = Self.heldBack(refusal, merchantId: message.merchantId, slots: gate.policy.maxConcurrent)
        case .sendWindow(let refusal):
            // The same answer as the send gate's refusal at connect time (``GatewayResult/notAnswered(_:)``).
            if case .send = call { return .sent(.notAnswered(.refusedBeforeSending(refusal))) }
            (code, detail) = ("paypipe.send_window", "not sent: \(refusal)")
        }
        if case .send = call { return .sent(.local(.transient, code: code, message: detail)) }
        return .notAsked(code: code, reason: detail)
    }

    /// The call, on a pool thread holding the merchant's slot.
    public func perform(_ call: Call, for message: StageMessage, window: SendWindow?, client: HTTPClient) -> (answer: Answer, report: CircuitState.Report) {
        switch call {
        case .send(let attemptId, let request, let endpoint, let reference):
            let result = CaptureSuspension.result(self.client.authorize(
                request, reference: reference, endpoint: endpoint, requestId: "A\(attemptId)", now: clock(), window: window, using: client),
                asked: CaptureSuspension.asksSuspension(request))
            return (.sent(result), Self.report(result.errorCode))
        case .query(let attemptId, let reference, let endpoint, let expected, let suspended):
            var result = self.client.find(
                reference: reference, endpoint: endpoint, expected: expected, requestId: "Q\(attemptId)", now: clock(), using: client)
            if case .found(let found) = result { result = .found(CaptureSuspension.result(found, asked: suspended)) }
            if case .inconclusive(let code, _) = result { return (.queried(result), Self.report(code)) }
            return (.queried(result), .healthy)
        }
    }

    /// The failure code and reason of a call the gate held back: nothing was sent (an AUTH is certainly not sent, a
    /// query asked nothing). Submit asks for no rate, so a refusal is a taken slot or the circuit.
    static func heldBack(_ refusal: EndpointGate.Refusal, merchantId: String, slots: Int) -> (code: String, reason: String) {
        switch refusal {
        case .busy: ("merchant_busy", "merchant \(merchantId) has \(slots) gateway calls in flight")
        case .circuitOpen, .rateLimited: ("circuit_open", "the gateway is failing; requests paused")
        }
    }

    /// What a call's error code tells the circuit. Only failures that say nothing about the payment count (connection
    /// refused, timeouts, resets, 5xx): a decline or a field error is a healthy gateway; an AUTH the send window held
    /// back was never sent and says nothing.
    static func report(_ code: String?) -> CircuitState.Report {
        guard let code else { return .healthy }
        if code == "paypipe.send_window" { return .silent }
        return code == "paypipe.transport" || code.hasPrefix("paypipe.http_5") ? .failed(pause: nil) : .healthy
    }

    /// The protocol's view of a payment, read under its row lock in the current transaction.
    private func snapshot(
        _ payment: PaymentRecord, view: ProtocolView, gateway: SubmitProtocol.Gateway = .ready, requestStored: Bool = true
    ) -> SubmitProtocol.Snapshot {
        SubmitProtocol.Snapshot(
            status: payment.status, firstReceivedAt: payment.firstReceivedAt, now: view.now, latest: view.latest,
            inconclusiveQueries: view.inconclusive, notFoundQueries: view.notFound, lastNotFound: view.lastNotFound,
            gateway: gateway, requestStored: requestStored)
    }

    /// Seconds from an attempt's send deadline to its reconciliation: the total timeout of the endpoint's transport
    /// plus the margin (the `webservices` transport has no `exp`, so this wait is all that bounds its AUTH).
    private func settleSeconds(_ endpoint: GatewayEndpoint) -> Double { client.totalTimeout(for: endpoint) + settings.reconcileGrace }

    private func protocolView(_ payment: PaymentRecord, transaction: PostgresConnection) throws -> ProtocolView {
        // An attempt written before migration 5 has no reconciliation time: the old rule (start + timeout + grace),
        // with the jwt transport's timeout, the only transport there was then.
        try attempts.protocolView(paymentId: payment.id, legacySettleSeconds: client.totalTimeout + settings.reconcileGrace, on: transaction)
    }

    /// Record, for one answer.
    private func record(_ answered: Answered<StageMessage, Call, Answer>, transaction: PostgresConnection) throws -> Recorded {
        let (attemptId, reference) = answered.call.attempt
        let answer = answered.answer
        guard let payment = try lockedPayment(answered.message, transaction: transaction) else { return .decided(.failure(unknown(answered.message))) }
        let decision = machine.record(answer, attemptId: attemptId, snapshot: snapshot(payment, view: try protocolView(payment, transaction: transaction)))
        if case .queried(let result) = answer {
            // Every status query is kept, whatever it leads to; a stale one never counts for a newer attempt.
            var current = true
            if case .evidence = decision { current = false }
            try attempts.recordQuery(paymentId: payment.id, orderReference: reference, result: result, current: current, on: transaction)
        }
        switch decision {
        case .end(let result, let terminal):
            try attempts.finish(attemptId, state: .completed, result: result, open: true, on: transaction)
            return .finished(try finish(payment, as: terminal.status, code: terminal.errorCode, detail: terminal.detail, transaction: transaction))
        case .uncertain(let result):
            try attempts.finish(attemptId, state: .uncertain, result: result, open: true, on: transaction)
            return .failed(.transient(code: "gateway_outcome_uncertain", reason: result.failureDetail))
        case .notSent(let result):
            try attempts.finish(attemptId, state: .notSent, result: result, open: true, on: transaction)
            try payments.transition(payment.id, from: .submitting, to: .prepared, actor: Self.actor, detail: result.failureDetail, on: transaction)
            // Refused by the send window: re-plan at once (a new attempt, a new window). Otherwise the gateway or
            // this worker is busy: retry later.
            return result.errorCode == "paypipe.send_window" ? .again : .failed(.transient(code: "gateway_unavailable", reason: result.failureDetail))
        case .confirmedAbsent:
            try attempts.finish(attemptId, state: .notSent, result: .local(.transient, code: "paypipe.not_found", message: "gateway holds no such transaction"),
                                open: true, on: transaction)
            try payments.transition(payment.id, from: .submitting, to: .prepared, actor: Self.actor, detail: "gateway confirmed no AUTH", on: transaction)
            return .again
        case .awaitConfirmation(let found):
            return .failed(.transient(code: "awaiting_confirmation", reason: "\(found) of \(settings.notFoundConfirmations) 'not found' answers"))
        case .inconclusive(_, let code, let reason):
            return .failed(.transient(code: "reconciliation_inconclusive", reason: "\(code): \(reason)"))
        case .review(let count, let code, let reason):
            return .finished(try finish(payment, as: .needsReview, code: "reconciliation_inconclusive",
                                        detail: "\(count) status queries gave no answer; last: \(code): \(reason)", transaction: transaction))
        case .retry(let code, let reason):
            return .failed(.transient(code: code, reason: reason))
        case .evidence(let result, let lateAuthorization):
            if case .sent = answer, let result { try attempts.recordEvidence(attemptId, result: result, on: transaction) }
            if payment.status.isTerminal { metrics?.lateAnswer(outcome: result?.outcome.rawValue ?? "none") }
            if lateAuthorization {
                // The gateway authorised a payment PayPipe had failed: both facts stay in the audit trail, and the
                // merchant hears `payment.needs_review` (the capture/void issue replaces this with an automatic void).
                try payments.transition(payment.id, from: .failed, to: .needsReview, actor: Self.actor, errorCode: "late_authorization",
                                        detail: "AUTH attempt \(attemptId) was authorised after the payment failed: \(result?.failureDetail ?? "")",
                                        on: transaction)
                return .finished(.handOff(to: .notify, payment.message))
            }
            if payment.status.isTerminal { return .finished(.handOff(to: .notify, payment.message)) }
            // A newer attempt (or none) is the payment's business now; this message waits like any other.
            return .failed(.transient(code: "attempt_superseded", reason: "AUTH attempt \(attemptId) is no longer the payment's current attempt"))
        }
    }

    /// Prepare, for one message: decide what to do, and when sending, commit the `sending` attempt first.
    private func plan(_ message: StageMessage, transaction: PostgresConnection) throws -> Prepared<Call> {
        guard let payment = try lockedPayment(message, transaction: transaction) else { return .failed(unknown(message)) }
        let view = try protocolView(payment, transaction: transaction)
        var gateway = SubmitProtocol.Gateway.ready
        var endpoint: GatewayEndpoint?
        var request: GatewayRequest?
        if payment.status == .prepared || payment.status == .submitting {
            do {
                // A status query goes to the site the AUTH went to, not today's configuration.
                endpoint = try self.endpoint(for: payment, site: payment.status == .submitting ? view.siteReference : nil, transaction: transaction)
                if !gate.permits(endpoint!.url) { gateway = .circuitOpen }
            } catch StageFailure.permanent(let failure) {
                gateway = .notConfigured(failure.reason)
            }
            if payment.status == .prepared { request = try requests.load(payment.id, on: transaction) }
        }
        let current = snapshot(payment, view: view, gateway: gateway, requestStored: payment.status != .prepared || request != nil)
        switch machine.plan(current) {
        case .handOff:
            return .finished(.handOff(to: .notify, payment.message))
        case .wait(let code, let reason, let until):
            // A wait whose end is known is re-driven then (the database's time, as this worker's clock reads it).
            guard let until else { return .failed(.transient(code: code, reason: "payment \(payment.id): \(reason)")) }
            return .failed(.waiting(code: code, reason: "payment \(payment.id): \(reason)", until: until, decidedAt: current.now, now: clock()))
        case .end(let status, let code, let detail):
            return .finished(try finish(payment, as: status, code: code, detail: detail, transaction: transaction))
        case .send:
            guard let request, let endpoint else { preconditionFailure("the protocol sends only with a request and an endpoint") }
            let reference = GatewayOrderReference.forPayment(merchantReference: request.orderReference, paymentId: payment.id)
            let attemptId = try attempts.begin(
                paymentId: payment.id, orderReference: reference, requestType: request.requestTypes.joined(separator: ","),
                siteReference: endpoint.siteReference, sendWindow: settings.sendWindow, settleSeconds: settleSeconds(endpoint),
                on: transaction)
            try payments.transition(payment.id, from: .prepared, to: .submitting, actor: Self.actor, on: transaction)
            return .call(.send(attemptId: attemptId, request: CaptureSuspension.request(request, mode: payment.captureMode, connector: endpoint.connector),
                               endpoint: endpoint, reference: reference))
        case .query(let attemptId):
            guard let endpoint, let reference = view.orderReference else { preconditionFailure("the protocol queries only an attempt with an endpoint") }
            return .call(.query(attemptId: attemptId, reference: reference, endpoint: endpoint,
                                expected: GatewayResponseMapper.Expected(amountMinor: payment.amountMinor, currency: payment.currency, orderReference: reference),
                                suspended: payment.captureMode == .manual))
        case .rearm(let detail):
            try payments.transition(payment.id, from: .submitting, to: .prepared, actor: Self.actor, detail: detail, on: transaction)
            return .failed(.transient(code: "attempt_missing", reason: "payment \(payment.id) was submitting: \(detail)"))
        }
    }

    /// Prepare, set-based: plans a `.send` for every payment of the batch the protocol sends for, with two
    /// statements for the batch (lock and read; attempts, transitions and events). The protocol alone decides, on the
    /// snapshot the batch read gives (payment, open attempt, database clock, endpoint and circuit, stored request);
    /// a payment's first message decides, and everything that is not a send (`nil`) goes through
    /// ``plan(_:transaction:)``, which reads the attempt history too, under the same locks.
    private func planInBulk(_ messages: [StageMessage], transaction: PostgresConnection) throws -> [Call?] {
        let candidates = try SubmitPlanStatement.lock(messages.map(\.paymentId), requests: requests, on: transaction)
        /// Per merchant: its endpoint, or why it has none.
        var endpoints: [String: (endpoint: GatewayEndpoint?, notConfigured: String?)] = [:]
        var seen = Set<UUID>()
        var ready: [(index: Int, request: GatewayRequest, endpoint: GatewayEndpoint, reference: String)] = []
        for (index, message) in messages.enumerated() where seen.insert(message.paymentId).inserted {
            guard let candidate = candidates[message.paymentId] else { continue }
            let merchantId = candidate.payment.merchantId
            if endpoints[merchantId] == nil {
                do {
                    endpoints[merchantId] = (try endpoint(for: candidate.payment, site: nil, transaction: transaction), nil)
                } catch StageFailure.permanent(let failure) {
                    endpoints[merchantId] = (nil, failure.reason)
                }
            }
            let endpoint = endpoints[merchantId]?.endpoint
            let gateway: SubmitProtocol.Gateway = if let endpoint {
                gate.permits(endpoint.url) ? .ready : .circuitOpen
            } else {
                .notConfigured(endpoints[merchantId]?.notConfigured ?? "")
            }
            let snapshot = SubmitProtocol.Snapshot(
                status: candidate.payment.status, firstReceivedAt: candidate.payment.firstReceivedAt, now: candidate.now,
                latest: candidate.openAttempt.map { SubmitProtocol.Attempt(id: $0, state: .sending, reconcileAfter: .distantFuture) },
                gateway: gateway, requestStored: candidate.request != nil)
            guard machine.plan(snapshot) == .send, let request = candidate.request, let endpoint else { continue }
            ready.append((index, CaptureSuspension.request(request, mode: candidate.payment.captureMode, connector: endpoint.connector), endpoint,
                          GatewayOrderReference.forPayment(merchantReference: request.orderReference, paymentId: candidate.payment.id)))
        }
        var plans = [Call?](repeating: nil, count: messages.count)
        guard !ready.isEmpty else { return plans }
        let attemptIds = try SubmitPlanStatement.begin(ready.map {
            SubmitPlanStatement.Send(paymentId: messages[$0.index].paymentId, orderReference: $0.reference,
                                     requestType: $0.request.requestTypes.joined(separator: ","), siteReference: $0.endpoint.siteReference,
                                     settleSeconds: settleSeconds($0.endpoint))
        }, sendWindow: settings.sendWindow, on: transaction)
        for send in ready {
            guard let attemptId = attemptIds[messages[send.index].paymentId] else { continue }
            plans[send.index] = .send(attemptId: attemptId, request: send.request, endpoint: send.endpoint, reference: send.reference)
        }
        return plans
    }

    /// Record, set-based: records every AUTH answer the protocol ends its payment with (authorised, declined,
    /// permanent error, needs review) in one statement for the batch, which re-checks in SQL what the protocol
    /// assumes here: the payment is `submitting` and the attempt is its latest AUTH attempt, still open. Everything
    /// else (`nil`) goes through ``record(_:transaction:)``: uncertain and transient answers, queries, a stale
    /// attempt, a payment no longer `submitting`.
    private func recordInBulk(_ items: [Answered<StageMessage, Call, Answer>], transaction: PostgresConnection) throws -> [Recorded?] {
        var seen = Set<UUID>()
        var endings: [(index: Int, ending: SubmitRecordStatement.Ending)] = []
        for (index, item) in items.enumerated() {
            guard case .send(let attemptId, _, _, _) = item.call, seen.insert(item.message.paymentId).inserted else { continue }
            let assumed = SubmitProtocol.Snapshot(
                status: .submitting, firstReceivedAt: .distantPast, now: .distantPast,
                latest: SubmitProtocol.Attempt(id: attemptId, state: .sending, reconcileAfter: .distantFuture))
            guard case .end(let result, let terminal) = machine.record(item.answer, attemptId: attemptId, snapshot: assumed) else { continue }
            endings.append((index, SubmitRecordStatement.Ending(paymentId: item.message.paymentId, attemptId: attemptId, result: result, decision: terminal)))
        }
        var next = [Recorded?](repeating: nil, count: items.count)
        guard !endings.isEmpty else { return next }
        let ended = try SubmitRecordStatement.finish(endings.map(\.ending), on: transaction)
        for (offset, handOff) in ended.enumerated() {
            next[endings[offset].index] = handOff.map { .finished(.handOff(to: .notify, $0)) }
        }
        return next
    }

    // MARK: Reconciliation

    /// Fails every payment stuck in `decrypted` or `prepared` past the payment deadline (`deadline_exceeded`), which
    /// shreds its card data, so card data is never kept longer than the deadline whichever stage lost the payment.
    /// The protocol decides (``SubmitProtocol/mayExpire(_:)``): never while an attempt may be in flight. Claims with
    /// `SKIP LOCKED`, so it never waits for a lane and never races one. Returns the hand-offs to notification.
    public func reconcile(on connection: PostgresConnection) throws -> [(stage: Stage, message: StageMessage)] {
        try connection.transaction { transaction in
            let rows = try transaction.query(
                """
                SELECT \(PaymentRecord.columns) FROM payments
                WHERE stage IN ('authorize', 'submit') AND status IN ('decrypted', 'prepared')
                  AND first_received_at < clock_timestamp() - make_interval(secs => $1)
                ORDER BY first_received_at LIMIT 500
                FOR UPDATE SKIP LOCKED
                """, [settings.paymentDeadline])
            var ended: [(stage: Stage, message: StageMessage)] = []
            for row in rows {
                let payment = try PaymentRecord(row: row)
                guard machine.mayExpire(snapshot(payment, view: try protocolView(payment, transaction: transaction))) else { continue }
                let outcome = try finish(payment, as: .failed, code: "deadline_exceeded",
                                         detail: "still \(payment.status.rawValue) after the payment deadline of \(Int(settings.paymentDeadline))s",
                                         transaction: transaction)
                if case .handOff(let handOff) = outcome, let stage = handOff.stage, let message = handOff.message { ended.append((stage, message)) }
            }
            return ended
        }
    }

    // MARK: Helpers

    private func lockedPayment(_ message: StageMessage, transaction: PostgresConnection) throws -> PaymentRecord? {
        try payments.load(message.paymentId, forUpdate: true, on: transaction)
    }

    private func unknown(_ message: StageMessage) -> StageFailure {
        .unattributable(code: "unknown_payment", reason: "payment \(message.paymentId) does not exist")
    }

    /// The merchant's endpoint; `site` (an attempt's stored site) replaces the configured site reference.
    private func endpoint(for payment: PaymentRecord, site: String?, transaction: PostgresConnection) throws -> GatewayEndpoint {
        let merchant = try directory.entry(payment.merchantId, on: transaction)?.merchant
        switch GatewayEndpoint.forMerchant(merchant?.config.gateway, secrets: merchant?.secrets, site: site) {
        case .success(let endpoint): return endpoint
        case .failure(let error):
            throw StageFailure.permanent(PaymentFailure(paymentId: payment.id, code: "gateway_not_configured",
                                                        reason: "merchant \(payment.merchantId) has \(error.reason)"))
        }
    }

    /// Moves the payment to a terminal status (the trigger crypto-shreds its card data) and hands it to notification.
    private func finish(
        _ payment: PaymentRecord, as status: PaymentStatus, code: String?, detail: String?, transaction: PostgresConnection
    ) throws -> StageOutcome {
        try payments.transition(payment.id, from: payment.status, to: status, actor: Self.actor, errorCode: code, detail: detail, on: transaction)
        return .handOff(to: .notify, payment.message)
    }
}
