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
/// Every decision is ``SubmitProtocol``'s (a pure value); this type carries them out, per message and set-based.
///
/// No AUTH is sent after the payment deadline (`deadline_exceeded`). Waiting and retrying use the runtime's delayed
/// retry tiers (``StageFailure/transient(code:reason:)``), so a gateway outage parks work in the retry queues.
public struct SubmitStage: StageHandler {
    public let stage = Stage.submit
    /// The `actor` of the stage's audit events.
    static let actor = "submit"
    private let directory: MerchantDirectory
    private let requests: GatewayRequestStore
    /// The merchant's connector is chosen per call by its endpoint (``GatewayConnectors``).
    private let client: any GatewayConnector
    private let settings: SubmitSettings
    private let clock: @Sendable () -> Date
    /// The call-out gate shared by every lane of the worker: a circuit per gateway endpoint (URL), and
    /// `merchantConcurrency` call slots per merchant, so a merchant whose gateway is slow cannot occupy every thread.
    public let gate: EndpointGate
    /// The worker's gateway-call threads, each with a keep-alive HTTP client (shared by the lanes).
    private let calls: HTTPClientPool
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
        gate = EndpointGate(
            policy: EndpointGatePolicy(maxConcurrent: settings.merchantConcurrency, failureThreshold: settings.circuitFailureThreshold,
                                       openSeconds: settings.circuitOpenSeconds, maxWait: 1),
            stage: .submit, clock: clock)
        calls = HTTPClientPool(size: settings.callConcurrency, configuration: client.http, name: "paypipe-submit-call")
    }

    public func decode(_ message: InboundMessage) throws(StageFailure) -> StageMessage {
        try StageMessage.decode(message.body)
    }

    /// A batch in rounds of three steps, none holding a transaction across the network:
    /// 1. one transaction plans every message (``BatchTransaction``: one commit for the batch; a `sending` attempt
    ///    is committed before its AUTH);
    /// 2. the calls run concurrently on ``calls`` (keep-alive clients, at most `merchantConcurrency` per merchant);
    /// 3. one transaction records every answer.
    /// A message whose query found no AUTH starts another round (at most three, as before).
    ///
    /// Steps 1 and 3 first settle the plain messages of the batch with a few statements for the whole batch
    /// (``planInBulk(_:window:transaction:)``, ``recordInBulk(_:transaction:)``): PostgreSQL's cost is per statement
    /// far more than per row. The per-message steps handle everything else in the same transaction.
    public func process(_ batch: [StageMessage], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        var results = [Result<StageOutcome, StageFailure>?](repeating: nil, count: batch.count)
        var active = Array(batch.indices)
        for _ in 0..<3 where !active.isEmpty {
            // Taken before any attempt of the round is committed, so the send gate closes no later than the
            // attempts' `send_deadline` on the database clock.
            let window = SendWindow(seconds: settings.sendWindow, from: ContinuousClock.now, wallClock: Date())
            let plans = BatchTransaction.run(
                active.map { batch[$0] }, on: database, bulk: { try planInBulk($0, window: window, transaction: $1) }
            ) { message, transaction in
                try plan(message, window: window, transaction: transaction)
            }
            var calls: [(index: Int, plan: Plan)] = []
            for (offset, planned) in plans.enumerated() {
                let index = active[offset]
                switch planned {
                case .success(.finished(let outcome)): results[index] = .success(outcome)
                case .success(.retryLater(let failure)): results[index] = handleFailure(failure, message: batch[index], database: database)
                case .success(let call): calls.append((index, call))
                case .failure(let error): results[index] = handleFailure(FailureClassifier.classify(error), message: batch[index], database: database)
                }
            }
            let requests = calls.map { (message: batch[$0.index], plan: $0.plan) }
            let answers = self.calls.perform(requests.count) { [self] offset, client in
                call(requests[offset].plan, message: requests[offset].message, client: client)
            }
            let recorded = BatchTransaction.run(Array(zip(requests, answers)), on: database, bulk: { try recordInBulk($0, transaction: $1) }) { item, transaction in
                try record(item.1, for: item.0.message, plan: item.0.plan, transaction: transaction)
            }
            active = []
            for (offset, next) in recorded.enumerated() {
                let index = calls[offset].index
                switch next {
                case .success(.finished(let outcome)): results[index] = .success(outcome)
                case .success(.retryLater(let failure)): results[index] = handleFailure(failure, message: batch[index], database: database)
                case .success(.again): active.append(index)
                case .failure(let error): results[index] = handleFailure(FailureClassifier.classify(error), message: batch[index], database: database)
                }
            }
        }
        // At most: query (not found) → send. A third round would mean the gateway contradicts itself.
        for index in active {
            results[index] = .failure(.transient(code: "gateway_inconsistent", reason: "payment \(batch[index].paymentId) did not settle after repeated rounds"))
        }
        return results.map { $0! }
    }

    // MARK: Protocol steps

    /// What the first transaction decided, with what the call needs.
    private enum Plan: Sendable {
        case finished(StageOutcome)
        case send(attemptId: Int64, request: GatewayRequest, endpoint: GatewayEndpoint, reference: String, window: SendWindow)
        /// `suspended`: the AUTH asked to be suspended (manual capture), so a record with settle status 2 is authorised.
        case query(attemptId: Int64, reference: String, endpoint: GatewayEndpoint, expected: GatewayResponseMapper.Expected, suspended: Bool)
        /// Commit what was decided, then retry the message later.
        case retryLater(StageFailure)

        var endpoint: GatewayEndpoint? {
            switch self {
            case .send(_, _, let endpoint, _, _), .query(_, _, let endpoint, _, _): endpoint
            case .finished, .retryLater: nil
            }
        }

        var attempt: (id: Int64, reference: String)? {
            switch self {
            case .send(let id, _, _, let reference, _), .query(let id, let reference, _, _, _): (id, reference)
            case .finished, .retryLater: nil
            }
        }
    }

    private typealias Answer = SubmitProtocol.Answer

    /// What the second transaction decided.
    private enum Next {
        case finished(StageOutcome)
        /// The attempt is certainly not processed: start over from `prepared` (bounded by the rounds in `process`).
        case again
        case retryLater(StageFailure)
    }

    /// Step 2 for one message, on a pool thread, through the gate: a call that finds no slot of its merchant within a
    /// second, or finds the circuit's half-open trial taken, is not made (an AUTH is then certainly not sent; a query
    /// asked nothing and spends no query budget).
    private func call(_ plan: Plan, message: StageMessage, client: HTTPClient) -> Answer {
        guard let endpoint = plan.endpoint else { preconditionFailure("only sends and queries are called") }
        let permit: EndpointGate.Permit
        switch gate.acquire(EndpointGate.Call(endpoint: endpoint.url, owner: message.merchantId)) {
        case .acquired(let acquired):
            permit = acquired
        case .refused(let refusal):
            let (code, reason) = Self.heldBack(refusal, merchantId: message.merchantId, slots: gate.policy.maxConcurrent)
            if case .send = plan { return .sent(.local(.transient, code: code, message: reason)) }
            return .notAsked(code: code, reason: reason)
        }
        switch plan {
        case .send(let attemptId, let request, _, let reference, let window):
            let result = CaptureSuspension.result(self.client.authorize(
                request, reference: reference, endpoint: endpoint, requestId: "A\(attemptId)", now: clock(), window: window, using: client),
                asked: CaptureSuspension.asksSuspension(request))
            gate.release(permit, report: Self.report(result.errorCode))
            return .sent(result)
        case .query(let attemptId, let reference, _, let expected, let suspended):
            var result = self.client.find(
                reference: reference, endpoint: endpoint, expected: expected, requestId: "Q\(attemptId)", now: clock(), using: client)
            if case .found(let found) = result { result = .found(CaptureSuspension.result(found, asked: suspended)) }
            if case .inconclusive(let code, _) = result {
                gate.release(permit, report: Self.report(code))
            } else {
                gate.release(permit, report: .healthy)
            }
            return .queried(result)
        case .finished, .retryLater:
            preconditionFailure("only sends and queries are called")
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

    /// Step 3 for one message.
    private func record(_ answer: Answer, for message: StageMessage, plan: Plan, transaction: PostgresConnection) throws -> Next {
        guard let (attemptId, reference) = plan.attempt else { preconditionFailure("answer without a call") }
        let payment = try lockedPayment(message, transaction: transaction)
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
            return .retryLater(.transient(code: "gateway_outcome_uncertain", reason: result.failureDetail))
        case .notSent(let result):
            try attempts.finish(attemptId, state: .notSent, result: result, open: true, on: transaction)
            try payments.transition(payment.id, from: .submitting, to: .prepared, actor: Self.actor, detail: result.failureDetail, on: transaction)
            // Refused by the send window: re-plan at once (a new attempt, a new window). Otherwise the gateway or
            // this worker is busy: retry later.
            return result.errorCode == "paypipe.send_window" ? .again : .retryLater(.transient(code: "gateway_unavailable", reason: result.failureDetail))
        case .confirmedAbsent:
            try attempts.finish(attemptId, state: .notSent, result: .local(.transient, code: "paypipe.not_found", message: "gateway holds no such transaction"),
                                open: true, on: transaction)
            try payments.transition(payment.id, from: .submitting, to: .prepared, actor: Self.actor, detail: "gateway confirmed no AUTH", on: transaction)
            return .again
        case .awaitConfirmation(let found):
            return .retryLater(.transient(code: "awaiting_confirmation", reason: "\(found) of \(settings.notFoundConfirmations) 'not found' answers"))
        case .inconclusive(_, let code, let reason):
            return .retryLater(.transient(code: "reconciliation_inconclusive", reason: "\(code): \(reason)"))
        case .review(let count, let code, let reason):
            return .finished(try finish(payment, as: .needsReview, code: "reconciliation_inconclusive",
                                        detail: "\(count) status queries gave no answer; last: \(code): \(reason)", transaction: transaction))
        case .retry(let code, let reason):
            return .retryLater(.transient(code: code, reason: reason))
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
            return .retryLater(.transient(code: "attempt_superseded", reason: "AUTH attempt \(attemptId) is no longer the payment's current attempt"))
        }
    }

    /// Transaction 1: decide what to do, and when sending, commit the `sending` attempt first.
    private func plan(_ message: StageMessage, window: SendWindow, transaction: PostgresConnection) throws -> Plan {
        let payment = try lockedPayment(message, transaction: transaction)
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
        let decision = machine.plan(snapshot(payment, view: view, gateway: gateway, requestStored: payment.status != .prepared || request != nil))
        switch decision {
        case .handOff:
            return .finished(.handOff(to: .notify, payment.message))
        case .wait(let code, let reason):
            throw StageFailure.transient(code: code, reason: "payment \(payment.id): \(reason)")
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
            return .send(attemptId: attemptId, request: CaptureSuspension.request(request, mode: payment.captureMode, connector: endpoint.connector),
                         endpoint: endpoint,
                         reference: reference, window: window)
        case .query(let attemptId):
            guard let endpoint, let reference = view.orderReference else { preconditionFailure("the protocol queries only an attempt with an endpoint") }
            return .query(attemptId: attemptId, reference: reference, endpoint: endpoint,
                          expected: GatewayResponseMapper.Expected(amountMinor: payment.amountMinor, currency: payment.currency, orderReference: reference),
                          suspended: payment.captureMode == .manual)
        case .rearm(let detail):
            try payments.transition(payment.id, from: .submitting, to: .prepared, actor: Self.actor, detail: detail, on: transaction)
            return .retryLater(.transient(code: "attempt_missing", reason: "payment \(payment.id) was submitting: \(detail)"))
        }
    }

    /// Transaction 1, set-based: plans a `.send` for every payment of the batch the protocol sends for, with two
    /// statements for the batch (lock and read; attempts, transitions and events). The protocol alone decides, on the
    /// snapshot the batch read gives (payment, open attempt, database clock, endpoint and circuit, stored request);
    /// a payment's first message decides, and everything that is not a send (`nil`) goes through
    /// ``plan(_:window:transaction:)``, which reads the attempt history too, under the same locks.
    private func planInBulk(_ messages: [StageMessage], window: SendWindow, transaction: PostgresConnection) throws -> [Plan?] {
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
        var plans = [Plan?](repeating: nil, count: messages.count)
        guard !ready.isEmpty else { return plans }
        let attemptIds = try SubmitPlanStatement.begin(ready.map {
            SubmitPlanStatement.Send(paymentId: messages[$0.index].paymentId, orderReference: $0.reference,
                                     requestType: $0.request.requestTypes.joined(separator: ","), siteReference: $0.endpoint.siteReference,
                                     settleSeconds: settleSeconds($0.endpoint))
        }, sendWindow: settings.sendWindow, on: transaction)
        for send in ready {
            guard let attemptId = attemptIds[messages[send.index].paymentId] else { continue }
            plans[send.index] = .send(attemptId: attemptId, request: send.request, endpoint: send.endpoint, reference: send.reference, window: window)
        }
        return plans
    }

    /// Transaction 2, set-based: records every AUTH answer the protocol ends its payment with (authorised, declined,
    /// permanent error, needs review) in one statement for the batch, which re-checks in SQL what the protocol
    /// assumes here: the payment is `submitting` and the attempt is its latest AUTH attempt, still open. Everything
    /// else (`nil`) goes through ``record(_:for:plan:transaction:)``: uncertain and transient answers, queries, a
    /// stale attempt, a payment no longer `submitting`.
    private func recordInBulk(_ items: [((message: StageMessage, plan: Plan), Answer)], transaction: PostgresConnection) throws -> [Next?] {
        var seen = Set<UUID>()
        var endings: [(index: Int, ending: SubmitRecordStatement.Ending)] = []
        for (index, (request, answer)) in items.enumerated() {
            guard case .send(let attemptId, _, _, _, _) = request.plan, seen.insert(request.message.paymentId).inserted else { continue }
            let assumed = SubmitProtocol.Snapshot(
                status: .submitting, firstReceivedAt: .distantPast, now: .distantPast,
                latest: SubmitProtocol.Attempt(id: attemptId, state: .sending, reconcileAfter: .distantFuture))
            guard case .end(let result, let terminal) = machine.record(answer, attemptId: attemptId, snapshot: assumed) else { continue }
            endings.append((index, SubmitRecordStatement.Ending(paymentId: request.message.paymentId, attemptId: attemptId, result: result, decision: terminal)))
        }
        var next = [Next?](repeating: nil, count: items.count)
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
                if case .handOff(let stage, let message) = outcome { ended.append((stage, message)) }
            }
            return ended
        }
    }

    // MARK: Helpers

    private func lockedPayment(_ message: StageMessage, transaction: PostgresConnection) throws -> PaymentRecord {
        guard let payment = try payments.load(message.paymentId, forUpdate: true, on: transaction) else {
            throw StageFailure.unattributable(code: "unknown_payment", reason: "payment \(message.paymentId) does not exist")
        }
        return payment
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

    /// A permanent failure ends the payment `failed` (purged, notified); anything else goes back to the runtime.
    private func handleFailure(_ failure: StageFailure, message: StageMessage, database: PostgresConnection) -> Result<StageOutcome, StageFailure> {
        guard case .permanent(let permanent) = failure else { return .failure(failure) }
        do {
            return .success(try database.transaction { transaction in
                .handOff(to: .notify, try payments.recordFailure(permanent, on: transaction))
            })
        } catch {
            return .failure(FailureClassifier.classify(error))
        }
    }
}
