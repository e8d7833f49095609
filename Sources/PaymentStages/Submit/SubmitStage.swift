import AMQP
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
/// 2. After the call, the outcome, the terminal status and the card-data purge are committed together.
/// 3. A payment found `submitting` (a redelivery after a crash, or after an uncertain answer) is never sent again
///    blindly: once the client's total timeout plus a grace period has passed, a TRANSACTIONQUERY by order reference
///    decides. A found AUTH is adopted; only a confirmed "no such transaction" lets the AUTH be resent
///    (`submitting → prepared`); too many inconclusive queries end in `needs_review`.
///
/// No AUTH is sent after the payment deadline (`deadline_exceeded`). Waiting and retrying use the runtime's delayed
/// retry tiers (``StageFailure/transient(code:reason:)``), so a gateway outage parks work in the retry queues.
public struct SubmitStage: StageHandler {
    public let stage = Stage.submit
    /// The `actor` of the stage's audit events.
    static let actor = "submit"
    private let directory: MerchantDirectory
    private let cardData: CardDataStore
    private let requests: GatewayRequestStore
    private let client: any PaymentGateway
    private let settings: SubmitSettings
    private let clock: @Sendable () -> Date
    /// Shared by every lane of the worker (reference types inside a value-type stage).
    public let breaker: GatewayCircuitBreaker
    public let limiter: MerchantConcurrencyLimiter
    /// The worker's gateway-call threads, each with a keep-alive HTTP client (shared by the lanes).
    private let calls: HTTPClientPool
    private let payments = PaymentStore()
    private let attempts = GatewayAttemptStore()

    public init(
        directory: MerchantDirectory, cardData: CardDataStore, requests: GatewayRequestStore, client: any PaymentGateway,
        settings: SubmitSettings = SubmitSettings(), clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.directory = directory
        self.cardData = cardData
        self.requests = requests
        self.client = client
        self.settings = settings
        self.clock = clock
        breaker = GatewayCircuitBreaker(failureThreshold: settings.circuitFailureThreshold, openSeconds: settings.circuitOpenSeconds)
        limiter = MerchantConcurrencyLimiter(limit: settings.merchantConcurrency)
        calls = HTTPClientPool(size: settings.callConcurrency, configuration: client.http, name: "paypipe-submit-call")
    }

    public func decode(_ delivery: AMQPDelivery) throws(StageFailure) -> StageMessage {
        try StageMessage.decode(delivery.body)
    }

    /// A batch in rounds of three steps, none holding a transaction across the network:
    /// 1. one transaction plans every message (``BatchTransaction``: one commit for the batch; a `sending` attempt
    ///    is committed before its AUTH);
    /// 2. the calls run concurrently on ``calls`` (keep-alive clients, at most `merchantConcurrency` per merchant);
    /// 3. one transaction records every answer.
    /// A message whose query found no AUTH starts another round (at most three, as before).
    ///
    /// With ``SubmitSettings/setBased`` (the default), steps 1 and 3 first settle the plain messages of the batch
    /// with a few statements for the whole batch (``planInBulk(_:transaction:)``, ``recordInBulk(_:transaction:)``):
    /// PostgreSQL's cost is per statement far more than per row. The per-message steps stay the reference
    /// semantics and handle everything else in the same transaction.
    public func process(_ batch: [StageMessage], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        var results = [Result<StageOutcome, StageFailure>?](repeating: nil, count: batch.count)
        let planBulk: (([StageMessage], PostgresConnection) throws -> [Plan?])? =
            settings.setBased ? { try planInBulk($0, transaction: $1) } : nil
        let recordBulk: (([((message: StageMessage, plan: Plan), Answer)], PostgresConnection) throws -> [Next?])? =
            settings.setBased ? { try recordInBulk($0, transaction: $1) } : nil
        var active = Array(batch.indices)
        for _ in 0..<3 where !active.isEmpty {
            let plans = BatchTransaction.run(active.map { batch[$0] }, on: database, bulk: planBulk) { message, transaction in
                try plan(message, transaction: transaction)
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
            let recorded = BatchTransaction.run(Array(zip(requests, answers)), on: database, bulk: recordBulk) { item, transaction in
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

    /// What the first transaction decided.
    private enum Plan: Sendable {
        case finished(StageOutcome)
        case send(attemptId: Int64, request: GatewayRequest, endpoint: GatewayEndpoint)
        case query(attemptId: Int64?, orderReference: String, endpoint: GatewayEndpoint)
        /// Commit what was decided, then retry the message later.
        case retryLater(StageFailure)
    }

    /// What the gateway said (or that no slot was free to ask it).
    private enum Answer: Sendable {
        case sent(GatewayResult)
        case queried(TransactionQueryResult)
    }

    /// What the second transaction decided.
    private enum Next {
        case finished(StageOutcome)
        /// The gateway confirmed no AUTH exists: start over from `prepared` (bounded by the rounds in `process`).
        case again
        case retryLater(StageFailure)
    }

    /// Step 2 for one message, on a pool thread. The merchant's slot caps its calls in flight in this worker, so a
    /// merchant whose gateway is slow cannot occupy every thread; a call that finds no slot within a second is not
    /// sent (recorded like a gateway that did not take the request: retried later).
    private func call(_ plan: Plan, message: StageMessage, client: HTTPClient) -> Answer {
        let busy = "merchant \(message.merchantId) has \(limiter.limit) gateway calls in flight"
        switch plan {
        case .send(let attemptId, let request, let endpoint):
            guard limiter.acquire(message.merchantId, timeout: 1) else {
                return .sent(.local(.transient, code: "merchant_busy", message: busy))
            }
            defer { limiter.release(message.merchantId) }
            let result = self.client.authorize(
                claims: request.claims, requestTypes: request.requestTypes, endpoint: endpoint,
                requestId: "A\(attemptId)", now: clock(), using: client)
            breaker.record(endpoint.jwtURL, healthy: !GatewayCircuitBreaker.isEndpointFailure(result.errorCode), now: clock())
            return .sent(result)
        case .query(let attemptId, let orderReference, let endpoint):
            guard limiter.acquire(message.merchantId, timeout: 1) else {
                return .queried(.inconclusive(code: "merchant_busy", reason: busy))
            }
            defer { limiter.release(message.merchantId) }
            let result = self.client.queryTransaction(
                orderReference: orderReference, endpoint: endpoint, requestId: "Q\(attemptId ?? 0)", now: clock(), using: client)
            if case .inconclusive(let code, _) = result {
                breaker.record(endpoint.jwtURL, healthy: !GatewayCircuitBreaker.isEndpointFailure(code), now: clock())
            } else {
                breaker.record(endpoint.jwtURL, healthy: true, now: clock())
            }
            return .queried(result)
        case .finished, .retryLater:
            preconditionFailure("only sends and queries are called")
        }
    }

    /// Step 3 for one message.
    private func record(_ answer: Answer, for message: StageMessage, plan: Plan, transaction: PostgresConnection) throws -> Next {
        switch (plan, answer) {
        case (.send(let attemptId, _, _), .sent(let result)):
            return try recordSend(message, attemptId: attemptId, result: result, transaction: transaction)
        case (.query(let attemptId, let orderReference, _), .queried(let result)):
            return try recordQuery(message, attemptId: attemptId, orderReference: orderReference, result: result, transaction: transaction)
        default:
            preconditionFailure("answer does not match its plan")
        }
    }

    /// Transaction 1: decide what to do, and when sending, commit the `sending` attempt first.
    private func plan(_ message: StageMessage, transaction: PostgresConnection) throws -> Plan {
        let payment = try lockedPayment(message, transaction: transaction)
        switch payment.status {
        case .authorized, .declined, .failed, .needsReview:
            try cardData.purge(payment.id, on: transaction)
            return .finished(.handOff(to: .notify, payment.message))
        case .received, .decrypted:
            throw StageFailure.transient(code: "payment_not_prepared", reason: "payment \(payment.id) is still \(payment.status.rawValue)")
        case .prepared:
            if clock().timeIntervalSince(payment.firstReceivedAt) > settings.paymentDeadline {
                return .finished(try finish(payment, as: .failed, code: "deadline_exceeded",
                                            detail: "no AUTH sent: payment deadline of \(Int(settings.paymentDeadline))s passed", transaction: transaction))
            }
            let endpoint = try self.endpoint(for: payment, transaction: transaction)
            try requireClosedCircuit(endpoint)
            guard let request = try requests.load(payment.id, on: transaction) else {
                throw StageFailure.permanent(PaymentFailure(paymentId: payment.id, code: "missing_gateway_request", reason: "no stored gateway request"))
            }
            let attemptId = try attempts.begin(
                paymentId: payment.id, orderReference: request.orderReference,
                requestType: request.requestTypes.joined(separator: ","), on: transaction)
            try payments.transition(payment.id, from: .prepared, to: .submitting, actor: Self.actor, on: transaction)
            return .send(attemptId: attemptId, request: request, endpoint: endpoint)
        case .submitting:
            guard let attempt = try attempts.latestAuthorization(paymentId: payment.id, on: transaction) else {
                // `submitting` is only ever entered with an attempt row; without one, nothing was sent.
                try payments.transition(payment.id, from: .submitting, to: .prepared, actor: Self.actor, detail: "no attempt recorded", on: transaction)
                return .retryLater(.transient(code: "attempt_missing", reason: "payment \(payment.id) was submitting without an attempt"))
            }
            let endpoint: GatewayEndpoint
            do {
                endpoint = try self.endpoint(for: payment, transaction: transaction)
            } catch StageFailure.permanent(let failure) {
                // An AUTH may be outstanding: the payment cannot simply fail, a person must look.
                return .finished(try finish(payment, as: .needsReview, code: failure.code,
                                            detail: "\(failure.reason); AUTH attempt \(attempt.id) unresolved", transaction: transaction))
            }
            let settleAfter = attempt.startedAt.addingTimeInterval(client.totalTimeout + settings.reconcileGrace)
            guard clock() >= settleAfter else {
                throw StageFailure.transient(code: "awaiting_reconciliation",
                                             reason: "AUTH attempt \(attempt.id) may still be in flight; query after \(settleAfter)")
            }
            try requireClosedCircuit(endpoint)
            return .query(attemptId: attempt.id, orderReference: attempt.orderReference, endpoint: endpoint)
        }
    }

    /// Transaction 1, set-based: plans a `.send` for every payment of the batch that is plainly ready — `prepared`,
    /// within its deadline, its merchant's endpoint configured and its circuit closed, its request stored — with
    /// two statements for the batch (lock and read; attempts, transitions and events). Everything else (`nil`) goes
    /// through ``plan(_:transaction:)``, which also reports why: a repeated id in the batch, a payment already
    /// `submitting` or terminal or not yet `prepared`, a missing request, an open circuit, a passed deadline.
    private func planInBulk(_ messages: [StageMessage], transaction: PostgresConnection) throws -> [Plan?] {
        let candidates = try SubmitPlanStatement.lock(messages.map(\.paymentId), requests: requests, on: transaction)
        let now = clock()
        var endpoints: [String: GatewayEndpoint?] = [:]
        var seen = Set<UUID>()
        var ready: [(index: Int, request: GatewayRequest, endpoint: GatewayEndpoint)] = []
        for (index, message) in messages.enumerated() where seen.insert(message.paymentId).inserted {
            guard let candidate = candidates[message.paymentId], candidate.payment.status == .prepared,
                  now.timeIntervalSince(candidate.payment.firstReceivedAt) <= settings.paymentDeadline,
                  let request = candidate.request else { continue }
            let merchantId = candidate.payment.merchantId
            if endpoints[merchantId] == nil {
                do {
                    endpoints[merchantId] = .some(try endpoint(for: candidate.payment, transaction: transaction))
                } catch StageFailure.permanent {
                    endpoints[merchantId] = .some(nil)
                }
            }
            guard let endpoint = endpoints[merchantId] ?? nil, breaker.permits(endpoint.jwtURL, now: now) else { continue }
            ready.append((index, request, endpoint))
        }
        var plans = [Plan?](repeating: nil, count: messages.count)
        guard !ready.isEmpty else { return plans }
        let attemptIds = try SubmitPlanStatement.begin(ready.map {
            SubmitPlanStatement.Send(paymentId: messages[$0.index].paymentId, orderReference: $0.request.orderReference,
                                     requestType: $0.request.requestTypes.joined(separator: ","))
        }, on: transaction)
        for send in ready {
            guard let attemptId = attemptIds[messages[send.index].paymentId] else { continue }
            plans[send.index] = .send(attemptId: attemptId, request: send.request, endpoint: send.endpoint)
        }
        return plans
    }

    /// Transaction 2, set-based: records every AUTH answer that ends its payment (authorised, declined, permanent
    /// error, needs review) in one statement for the batch. Everything else (`nil`) goes through
    /// ``record(_:for:plan:transaction:)``: uncertain and transient answers, queries, a payment no longer
    /// `submitting`.
    private func recordInBulk(_ items: [((message: StageMessage, plan: Plan), Answer)], transaction: PostgresConnection) throws -> [Next?] {
        var seen = Set<UUID>()
        var endings: [(index: Int, ending: SubmitRecordStatement.Ending)] = []
        for (index, (request, answer)) in items.enumerated() {
            guard case .send(let attemptId, _, _) = request.plan, case .sent(let result) = answer,
                  TerminalDecision.endsPayment(result.outcome), seen.insert(request.message.paymentId).inserted else { continue }
            endings.append((index, SubmitRecordStatement.Ending(
                paymentId: request.message.paymentId, attemptId: attemptId, result: result, decision: TerminalDecision(result))))
        }
        var next = [Next?](repeating: nil, count: items.count)
        guard !endings.isEmpty else { return next }
        let ended = try SubmitRecordStatement.finish(endings.map(\.ending), on: transaction)
        for (offset, handOff) in ended.enumerated() {
            next[endings[offset].index] = handOff.map { .finished(.handOff(to: .notify, $0)) }
        }
        return next
    }

    /// Transaction 2 after an AUTH: record the answer and move the payment on.
    private func recordSend(_ message: StageMessage, attemptId: Int64, result: GatewayResult, transaction: PostgresConnection) throws -> Next {
        let payment = try lockedPayment(message, transaction: transaction)
        guard payment.status == .submitting else { return .finished(.handOff(to: payment.status.stage, payment.message)) }
        switch result.outcome {
        case .authorized, .declined, .permanentError, .needsReview:
            try attempts.finish(attemptId, state: .completed, result: result, on: transaction)
            return .finished(try finish(payment, with: result, transaction: transaction))
        case .uncertain:
            try attempts.finish(attemptId, state: .uncertain, result: result, on: transaction)
            return .retryLater(.transient(code: "gateway_outcome_uncertain", reason: result.failureDetail))
        case .transient:
            try attempts.finish(attemptId, state: .notSent, result: result, on: transaction)
            try payments.transition(payment.id, from: .submitting, to: .prepared, actor: Self.actor, detail: result.failureDetail, on: transaction)
            return .retryLater(.transient(code: "gateway_unavailable", reason: result.failureDetail))
        }
    }

    /// Transaction 2 after a TRANSACTIONQUERY: adopt, re-arm or count the inconclusive answer.
    private func recordQuery(
        _ message: StageMessage, attemptId: Int64?, orderReference: String, result: TransactionQueryResult, transaction: PostgresConnection
    ) throws -> Next {
        let payment = try lockedPayment(message, transaction: transaction)
        guard payment.status == .submitting else { return .finished(.handOff(to: payment.status.stage, payment.message)) }
        try attempts.recordQuery(paymentId: payment.id, orderReference: orderReference, result: result, on: transaction)
        switch result {
        case .found(let adopted):
            if let attemptId { try attempts.finish(attemptId, state: .completed, result: adopted, on: transaction) }
            return .finished(try finish(payment, with: adopted, transaction: transaction))
        case .notFound:
            if let attemptId {
                try attempts.finish(attemptId, state: .notSent, result: .local(.transient, code: "paypipe.not_found", message: "gateway holds no such transaction"), on: transaction)
            }
            try payments.transition(payment.id, from: .submitting, to: .prepared, actor: Self.actor, detail: "gateway confirmed no AUTH", on: transaction)
            return .again
        case .inconclusive(let code, let reason):
            let count = try attempts.inconclusiveQueries(paymentId: payment.id, since: attemptId ?? 0, on: transaction)
            guard count >= settings.maxInconclusiveQueries else {
                return .retryLater(.transient(code: "reconciliation_inconclusive", reason: "\(code): \(reason)"))
            }
            return .finished(try finish(payment, as: .needsReview, code: "reconciliation_inconclusive",
                                        detail: "\(count) status queries gave no answer; last: \(code): \(reason)", transaction: transaction))
        }
    }

    // MARK: Helpers

    /// Parks the message (payment unchanged, nothing sent) while the endpoint's circuit is open.
    private func requireClosedCircuit(_ endpoint: GatewayEndpoint) throws {
        guard breaker.permits(endpoint.jwtURL, now: clock()) else {
            throw StageFailure.transient(code: "circuit_open", reason: "gateway \(endpoint.jwtURL) is failing; requests paused")
        }
    }

    private func lockedPayment(_ message: StageMessage, transaction: PostgresConnection) throws -> PaymentRecord {
        guard let payment = try payments.load(message.paymentId, forUpdate: true, on: transaction) else {
            throw StageFailure.unattributable(code: "unknown_payment", reason: "payment \(message.paymentId) does not exist")
        }
        return payment
    }

    private func endpoint(for payment: PaymentRecord, transaction: PostgresConnection) throws -> GatewayEndpoint {
        let merchant = try directory.entry(payment.merchantId, on: transaction)?.merchant
        guard let gateway = merchant?.config.gateway, let secret = merchant?.secrets.jwtSecret, !secret.isEmpty else {
            throw StageFailure.permanent(PaymentFailure(paymentId: payment.id, code: "gateway_not_configured",
                                                        reason: "merchant \(payment.merchantId) has no gateway settings or JWT secret"))
        }
        return GatewayEndpoint(baseUrl: gateway.baseUrl, siteReference: gateway.siteReference, jwtUsername: gateway.jwtUsername, secret: secret)
    }

    /// The terminal status a final gateway result leads to.
    private func finish(_ payment: PaymentRecord, with result: GatewayResult, transaction: PostgresConnection) throws -> StageOutcome {
        let decision = TerminalDecision(result)
        return try finish(payment, as: decision.status, code: decision.errorCode, detail: decision.detail, transaction: transaction)
    }

    /// Moves the payment to a terminal status, crypto-shreds its card data and hands it to notification.
    private func finish(
        _ payment: PaymentRecord, as status: PaymentStatus, code: String?, detail: String?, transaction: PostgresConnection
    ) throws -> StageOutcome {
        try payments.transition(payment.id, from: payment.status, to: status, actor: Self.actor, errorCode: code, detail: detail, on: transaction)
        try cardData.purge(payment.id, on: transaction)
        return .handOff(to: .notify, payment.message)
    }

    /// A permanent failure ends the payment `failed` (purged, notified); anything else goes back to the runtime.
    private func handleFailure(_ failure: StageFailure, message: StageMessage, database: PostgresConnection) -> Result<StageOutcome, StageFailure> {
        guard case .permanent(let permanent) = failure else { return .failure(failure) }
        do {
            return .success(try database.transaction { transaction in
                let handOff = try payments.recordFailure(permanent, on: transaction)
                try cardData.purge(permanent.paymentId, on: transaction)
                return .handOff(to: .notify, handOff)
            })
        } catch {
            return .failure(FailureClassifier.classify(error))
        }
    }
}
