import Foundation
import HTTP
import JWT
import Pipeline
import Postgres

/// `paypipe-operations`: capture, void and refund of authorised payments (docs/operations-lifecycle.md), consumed from
/// `paypipe.operations` (routing keys `payment.capture.requested`, `payment.void.requested`,
/// `payment.refund.requested` on `paypipe.jobs`) on the same runtime as the AUTH stages: retries, dead letters, metrics.
///
/// Thin by design: what to send and what it leads to is decided by ``OperationProtocol`` (through ``OperationSteps``,
/// each step one transaction under the payment's row lock, writing only through ``OperationStore`` and
/// ``PaymentStore``); this type carries it out in the runtime's batch shape (``CallingStageHandler``: plan in the
/// prepare transaction, the call on the call-out pool through the gate, the answer in the record transaction, a
/// not-applied update sent again in the next round), never two messages of one merchant in one round. Exactly once: the operation and its `sending` attempt are committed before the call; a redelivered or
/// concurrent message finds them and resumes instead of sending again; a lost TRANSACTIONUPDATE answer is reconciled by
/// querying the AUTH, a lost REFUND answer goes to review and is never resent.
///
/// A finished operation is handed to `notify` (``OperationEventMessage``), which sends its event (`payment.captured`,
/// `payment.voided`, `payment.refunded`, `payment.operation_failed`) as a signed webhook and on `paypipe.results`.
public struct OperationsStage: CallingStageHandler {
    public let stage = Stage.operations
    public static let actor = "operations"

    let directory: MerchantDirectory
    let client: TrustPaymentsClient
    /// Every connector, with Trust Payments' HTTP settings: what an OPP or TapPay merchant's operation goes through.
    let connectors: GatewayConnectors
    let steps: OperationSteps
    /// Seconds an attempt's bytes may wait on our side before they are refused (`PAYPIPE_SEND_WINDOW`).
    let sendWindow: Double
    /// Seconds after the send deadline and the transport's total timeout before a lost answer is reconciled.
    let reconcileGrace: Double
    /// Seconds between settlement queries of a captured payment (`PAYPIPE_SETTLEMENT_POLL`).
    let settlementPoll: Double
    /// The call-out phase's pool and gate; the gate takes every gateway call of the worker (operations, their status
    /// queries, the upkeep's), as submit's: a circuit per endpoint URL and at most `maxConcurrent` calls in flight per
    /// merchant.
    public let callOut: CallOut
    public var gate: EndpointGate { callOut.gate }

    public init(directory: MerchantDirectory, client: TrustPaymentsClient, steps: OperationSteps = OperationSteps(),
                sendWindow: Double = 5, reconcileGrace: Double = 30, settlementPoll: Double = 6 * 3600,
                gate: EndpointGatePolicy = EndpointGatePolicy(maxWait: 1)) {
        self.settlementPoll = settlementPoll
        // One call thread: a wave holds at most one message per merchant and operations are rare next to AUTHs.
        self.callOut = CallOut(pool: HTTPClientPool(size: 1, configuration: client.http, name: "paypipe-operations-call"),
                               gate: EndpointGate(policy: gate, stage: .operations), sendWindow: sendWindow, rounds: 3)
        self.directory = directory
        self.client = client
        self.connectors = GatewayConnectors(trustPayments: client, opp: OPPConnector(http: client.http, transport: client.transport),
                                            tapPay: TapPayConnector(http: client.http, transport: client.transport))
        self.steps = steps
        self.sendWindow = sendWindow
        self.reconcileGrace = reconcileGrace
    }

    /// A decoded delivery: an operation, or why it cannot be one (its merchant and id known).
    public enum Message: Sendable, Equatable {
        case request(OperationRequest)
        case invalid(kind: OperationRequest.Kind, merchantId: String, operationId: String, reason: String)
        /// The reconciler's hand-off of a payment (``reconcile(on:)``): void its late AUTH, or its authorisation not
        /// captured within `captureWithin`.
        case reconciled(StageMessage)

        var merchantId: String {
            switch self {
            case .request(let request): request.merchantId
            case .invalid(_, let merchantId, _, _): merchantId
            case .reconciled(let payment): payment.merchantId
            }
        }
    }

    public func decode(_ inbound: InboundMessage) throws(StageFailure) -> Message {
        if inbound.jobRoutingKey == nil, inbound.isFromWorkers {
            // Only workers publish to the stages exchange: a payment hand-off here is the reconciler's.
            return .reconciled(try StageMessage.decode(inbound.body))
        }
        guard let key = inbound.jobRoutingKey, let kind = OperationRequest.Kind(routingKey: key) else {
            throw .unattributable(code: "malformed_job", reason: "not an operation: routing key \(inbound.routingKey.prefix(64))")
        }
        do {
            return .request(try OperationRequest.decode(inbound.body, kind: kind))
        } catch {
            switch error {
            case .unaddressed(let reason): throw .unattributable(code: "malformed_job", reason: reason)
            case .invalid(let merchantId, let operationId, let reason):
                return .invalid(kind: kind, merchantId: merchantId, operationId: operationId, reason: reason)
            }
        }
    }

    /// The runtime's batch shape (``CallingStageHandler``) in waves of at most one message per merchant, so two
    /// operations of one payment never share a prepare transaction: the second is planned only after the first's
    /// round settled it, as when messages were handled one by one. Before a wave, a refund of a payment still recorded
    /// `captured` asks the gateway whether it settled since (``learnSettlement(_:database:)``).
    public func process(_ batch: [Message], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        var results = [Result<StageOutcome, StageFailure>?](repeating: nil, count: batch.count)
        for wave in Self.waves(batch.map(\.merchantId)) {
            var ready: [Int] = []
            for index in wave {
                do {
                    try learnSettlement(batch[index], database: database)
                    ready.append(index)
                } catch {
                    results[index] = .failure(FailureClassifier.classify(error))
                }
            }
            for (index, result) in zip(ready, processInRounds(ready.map { batch[$0] }, database: database)) { results[index] = result }
        }
        return results.map { $0! }
    }

    /// Batch indices in waves, each with at most one message of a merchant, every merchant's messages in batch order.
    static func waves(_ merchants: [String]) -> [[Int]] {
        var waves: [[Int]] = [], taken: [String: Int] = [:]
        for (index, merchant) in merchants.enumerated() {
            let wave = taken[merchant, default: 0]
            taken[merchant] = wave + 1
            if wave == waves.count { waves.append([]) }
            waves[wave].append(index)
        }
        return waves
    }

    // MARK: The batch shape's steps

    /// A gateway call an operation's plan committed the attempt of: its request, or the status query of a lost answer.
    public enum Call: Sendable {
        case send(Planned, request: GatewayOperation, connector: ConnectorCall?)
        case query(Planned, transactionReference: String, connector: ConnectorCall?)
    }

    /// What a call's answer is recorded against.
    public struct Planned: Sendable {
        let operation: OperationStore.Operation
        let attempt: Int64
        let endpoint: GatewayEndpoint
        let transport: OperationProtocol.Transport
    }

    /// An OPP or TapPay operation as its connector takes it (``connectorCall(_:_:endpoint:database:)``), read in the prepare.
    public struct ConnectorCall: Sendable {
        let operation: ConnectorOperation
        let reference: String
    }

    public enum Answer: Sendable {
        case sent(OperationSteps.Answer)
        case queried(Result<OperationProtocol.Evidence, OperationQueryFailure>)
    }

    /// Plans each message under its payment's lock (committing the operation and its attempt before any call).
    public func prepare(_ batch: [Message], window: SendWindow?, transaction: PostgresConnection) throws -> [Prepared<Call>] {
        try batch.map { try prepare($0, transaction: transaction) }
    }

    private func prepare(_ message: Message, transaction: PostgresConnection) throws -> Prepared<Call> {
        switch message {
        case .invalid(let kind, let merchantId, let operationId, let reason):
            // Recorded failed (audit; the id is then taken) and dead-lettered with the reason: with no payment it
            // names, there is no webhook target to report it to. Recorded so that no usable operation can ever read as
            // a repeat of it (``OperationRequest/unusable(kind:operationId:merchantId:reason:)``).
            let unusable = OperationRequest.unusable(kind: kind, operationId: operationId, merchantId: merchantId, reason: reason)
            _ = try steps.store.refuse(unusable, paymentId: nil, code: "invalid_job", reason: reason, on: transaction)
            return .failed(.unattributable(code: "invalid_job", reason: "operation \(operationId): \(reason)"))
        case .request(let request):
            guard let entry = try directory.entry(request.merchantId, on: transaction) else {
                return .failed(.unattributable(code: "unknown_merchant", reason: "merchant \(request.merchantId) is not configured"))
            }
            return try prepare(merchant: entry.merchant, transaction: transaction) { transport, timing in
                try steps.plan(request, transport: transport, timing: timing, on: transaction)
            }
        case .reconciled(let payment):
            guard let entry = try directory.entry(payment.merchantId, on: transaction) else {
                return .failed(.unattributable(code: "unknown_merchant", reason: "merchant \(payment.merchantId) is not configured"))
            }
            let status = try PaymentStore().load(payment.paymentId, on: transaction)?.status
            return try prepare(merchant: entry.merchant, transaction: transaction) { transport, timing in
                status == .authorized ? try steps.planExpiry(payment, transport: transport, timing: timing, on: transaction)
                    : try steps.planLateAuthorization(payment, transport: transport, timing: timing, on: transaction)
            }
        }
    }

    /// One message's plan and what it leads to: a call, or a result (a request with nothing to send it to is settled
    /// refused at once, in the same transaction).
    private func prepare(
        merchant: MerchantStore.Merchant, transaction: PostgresConnection,
        planning: (OperationProtocol.Transport, OperationStore.SendTiming) throws -> OperationSteps.Plan
    ) throws -> Prepared<Call> {
        let transport = Self.transport(merchant)
        let endpoint = Self.endpoint(merchant)
        let timing = OperationStore.SendTiming(
            sendWindow: sendWindow, settleSeconds: (endpoint.map { connectors.totalTimeout(for: $0) } ?? client.totalTimeout(for: .webservices)) + reconcileGrace)
        switch try planning(transport, timing) {
        case .wait(let code, let reason, let until):
            return .failed(Self.retried(code: code, reason: reason, until: until))
        case .nothing(let reason):
            return .finished(.settled(note: "nothing_to_do", reason: reason))
        case .conflict(let existing):
            return .failed(.unattributable(code: "operation_conflict",
                                           reason: "operationId \(existing.operationId) was used for another \(existing.kind.rawValue) (operation \(existing.id))"))
        case .finished(let operation):
            guard operation.paymentId != nil else {
                // A repeat of an operation recorded without a payment has no webhook target: it is dead-lettered with
                // the recorded code, never acknowledged without a trace.
                return .failed(.unattributable(code: operation.errorCode ?? "operation_failed",
                                               reason: "operation \(operation.operationId) was recorded failed without a payment: \(operation.errorMessage ?? "no reason")"))
            }
            return .finished(try report(operation, transaction: transaction))
        case .review(let operation):
            return .finished(reviewed(operation))
        case .send(let operation, let attempt, let gatewayRequest):
            let refusal: OperationSteps.Answer
            if let endpoint {
                let planned = Planned(operation: operation, attempt: attempt, endpoint: endpoint, transport: transport)
                guard endpoint.connector != .trustPayments else { return .call(.send(planned, request: gatewayRequest, connector: nil)) }
                if let call = try connectorCall(operation, gatewayRequest, endpoint: endpoint, database: transaction) {
                    return .call(.send(planned, request: gatewayRequest, connector: call))
                }
                refusal = .refused(code: "operation_not_supported", message: "\(gatewayRequest.requestType) is not a \(endpoint.connector.rawValue) operation")
            } else {
                refusal = .refused(code: "gateway_not_configured", message: "merchant \(merchant.id) has no gateway credentials for its transport")
            }
            let settled = try steps.settle(operation, attempt: attempt, answer: refusal, transport: transport, actor: Self.actor, on: transaction)
            switch try recorded(settled, transaction: transaction) {
            case .decided(let result): return .decided(result)
            case .again: return .failed(Self.unsettled)
            }
        case .query(let operation, let attempt, let reference):
            guard let endpoint else { return .failed(.transient(code: "gateway_not_configured", reason: "no gateway credentials to query with")) }
            let connector = endpoint.connector == .trustPayments ? nil : try operation.request.flatMap { try connectorCall(operation, $0, endpoint: endpoint, database: transaction) }
            return .call(.query(Planned(operation: operation, attempt: attempt, endpoint: endpoint, transport: transport),
                                transactionReference: reference, connector: connector))
        }
    }

    /// Through the gate as submit's calls: a circuit per endpoint URL, the merchant's slots; a send only within the
    /// round's send window (a status query charges nothing).
    public func gating(_ call: Call, for message: Message) -> GatedCall {
        switch call {
        case .send(let planned, _, _): GatedCall(EndpointGate.Call(endpoint: planned.endpoint.url, owner: message.merchantId), windowed: true)
        case .query(let planned, _, _): GatedCall(EndpointGate.Call(endpoint: planned.endpoint.url, owner: message.merchantId))
        }
    }

    public func perform(_ call: Call, for message: Message, window: SendWindow?, client http: HTTPClient) -> (answer: Answer, report: CircuitState.Report) {
        switch call {
        case .send(let planned, let request, let connector):
            let answer: OperationSteps.Answer = if let connector {
                OperationSteps.Answer(connectorResult: connectors.perform(connector.operation, reference: connector.reference, endpoint: planned.endpoint,
                                                                          requestId: "O\(planned.attempt)", now: Date(), window: window, using: http))
            } else {
                client.operate(request, endpoint: planned.endpoint, requestId: "O\(planned.attempt)", window: window, using: http)
            }
            return (.sent(answer), Self.report(answer))
        case .query(let planned, let reference, let connector):
            let evidence: Result<OperationProtocol.Evidence, OperationQueryFailure> = if let connector {
                connectors.findOperation(connector.operation, reference: connector.reference, endpoint: planned.endpoint,
                                         requestId: "Q\(planned.attempt)", now: Date(), using: http)
            } else {
                client.queryAuth(transactionReference: reference, endpoint: planned.endpoint, requestId: "Q\(planned.attempt)", using: http).map { .auth($0) }
            }
            return (.queried(evidence), Self.report(evidence))
        }
    }

    /// A call held back was not made: with submit's codes (``SubmitStage/heldBack(_:merchantId:slots:)``), and a send
    /// the window closed on as the HTTP send gate's refusal would be.
    public func heldBack(_ call: Call, for message: Message, because reason: HeldBack) -> Answer {
        let (code, detail): (String, String)
        switch reason {
        case .gate(let refusal): (code, detail) = SubmitStage.heldBack(refusal, merchantId: message.merchantId, slots: gate.policy.maxConcurrent)
        case .sendWindow(let refusal): (code, detail) = ("paypipe.send_window", "not sent: \(refusal)")
        }
        switch call {
        case .send: return .sent(.notSent(code: code, reason: detail))
        case .query: return .queried(.failure(OperationQueryFailure(code: code, reason: detail)))
        }
    }

    /// Records each answer under the payment's lock; an update the status query shows not applied goes another round
    /// (its plan then sends a new attempt).
    public func record(_ answers: [Answered<Message, Call, Answer>], observed: Void, transaction: PostgresConnection) throws -> [Recorded] {
        try answers.map { answered in
            switch (answered.call, answered.answer) {
            case (.send(let planned, _, _), .sent(let answer)):
                return try recorded(steps.settle(planned.operation, attempt: planned.attempt, answer: answer, transport: planned.transport,
                                                 actor: Self.actor, on: transaction), transaction: transaction)
            case (.query(let planned, _, _), .queried(.success(let evidence))):
                return try recorded(steps.reconciled(planned.operation, query: planned.attempt, evidence: evidence, actor: Self.actor, on: transaction),
                                    transaction: transaction)
            case (.query(let planned, _, _), .queried(.failure(let failure))):
                try steps.store.finishAttempt(planned.attempt, .init(state: .completed, outcome: "inconclusive", errorCode: failure.code,
                                                                     errorMessage: failure.reason), on: transaction)
                return .failed(.transient(code: "reconciliation_inconclusive", reason: "status query failed: \(failure.code): \(failure.reason)"))
            case (.send, .queried), (.query, .sent):
                preconditionFailure("an answer of another kind of call")
            }
        }
    }

    private func recorded(_ settled: OperationSteps.Settled, transaction: PostgresConnection) throws -> Recorded {
        switch settled {
        case .finished(let operation): .finished(try report(operation, transaction: transaction))
        case .review(let operation): .finished(reviewed(operation))
        case .retry(let code, _, _) where code == "operation_not_applied": .again
        case .retry(let code, let reason, let until): .failed(Self.retried(code: code, reason: reason, until: until))
        }
    }

    /// A message to retry: at `until` when its time is known, else on the retry tiers.
    static func retried(code: String, reason: String, until: Date?) -> StageFailure {
        until.map { .waiting(code: code, reason: reason, until: $0) } ?? .transient(code: code, reason: reason)
    }

    private static let unsettled = StageFailure.transient(code: "operation_not_applied", reason: "the update was not applied after several attempts")

    public func unsettled(_ message: Message) -> StageFailure { Self.unsettled }

    /// Payments whose late AUTH is to be voided, or whose manual authorisation was not captured within
    /// `captureWithin`, each handed to this stage once per reconciler round (their void is idempotent: one operation
    /// per payment). Runs on the reconciler thread every `PAYPIPE_RECONCILE_INTERVAL`.
    public func reconcile(on connection: PostgresConnection) throws -> [(stage: Stage, message: StageMessage)] {
        let rows = try connection.query(
            """
            (SELECT p.id, p.merchant_id, p.job_id FROM payments p
             WHERE p.status = 'needs_review' AND p.error_code = 'late_authorization'
               AND NOT EXISTS (SELECT 1 FROM payment_operations o WHERE o.merchant_id = p.merchant_id AND o.operation_id = 'late-authorization-' || p.id::text)
             ORDER BY p.updated_at LIMIT 100)
            UNION ALL
            (SELECT p.id, p.merchant_id, p.job_id FROM payments p
             WHERE p.lifecycle = 'authorized' AND p.capture_deadline <= clock_timestamp()
               AND NOT EXISTS (SELECT 1 FROM payment_operations o WHERE o.merchant_id = p.merchant_id AND o.operation_id = 'expiry-' || p.id::text)
             ORDER BY p.capture_deadline LIMIT 100)
            """)
        return try rows.map { row in
            (stage: .operations, message: StageMessage(paymentId: try row.decode("id", as: UUID.self), merchantId: try row.decode("merchant_id", as: String.self),
                                                      jobId: try row.decode("job_id", as: String.self)))
        }
    }

    /// How the protocol reaches the merchant's gateway: its Trust Payments transport, or its connector.
    static func transport(_ merchant: MerchantStore.Merchant) -> OperationProtocol.Transport {
        guard let gateway = merchant.config.gateway else { return .webservices }
        switch gateway.connector {
        case .trustPayments: return gateway.resolvedTransport == .jwt ? .jwt : .webservices
        case .opp: return .opp
        case .tapPay: return .tapPay
        }
    }

    /// An OPP or TapPay operation as its connector takes it: the decided request in the processor-neutral form, in the
    /// payment's currency, with the operation's own reference (``OPPWire/operationReference(paymentReference:operationRowId:)``).
    /// A refund references what the connector refunds (``GatewayConnector/refundTarget(payment:capture:)``): at OPP a
    /// captured pre-authorisation's capture, whose id the payment's succeeded capture operation recorded.
    func connectorCall(
        _ operation: OperationStore.Operation, _ request: GatewayOperation, endpoint: GatewayEndpoint, database: PostgresConnection
    ) throws -> ConnectorCall? {
        guard let paymentId = operation.paymentId, let payment = try PaymentStore().load(paymentId, on: database),
              var call = ConnectorOperation(request, currency: payment.currency ?? "") else { return nil }
        if case .refund(let authorisation, let amount, let currency) = call {
            let capture = try steps.store.operations(paymentId: paymentId, on: database)
                .last { $0.kind == .capture && $0.state == .succeeded && $0.gatewayReference != nil }?.gatewayReference
            call = .refund(transactionId: connectors.refundTarget(payment: authorisation, capture: capture, endpoint: endpoint), amountMinor: amount, currency: currency)
        }
        return ConnectorCall(operation: call, reference: OPPWire.operationReference(paymentReference: paymentId.paymentIDText, operationRowId: operation.id))
    }

    /// One gateway call through ``gate``: held back (no slot of the merchant within a second, the endpoint's circuit
    /// open) it is not made and `heldBack` says so with submit's codes (``SubmitStage/heldBack(_:merchantId:slots:)``);
    /// made, its outcome is reported to the endpoint's circuit.
    func gated<Answer>(
        _ endpoint: GatewayEndpoint, merchantId: String, heldBack: (String, String) -> Answer, report: (Answer) -> CircuitState.Report,
        _ call: () -> Answer
    ) -> Answer {
        switch gate.acquire(EndpointGate.Call(endpoint: endpoint.url, owner: merchantId)) {
        case .refused(let refusal):
            let (code, reason) = SubmitStage.heldBack(refusal, merchantId: merchantId, slots: gate.policy.maxConcurrent)
            return heldBack(code, reason)
        case .acquired(let permit):
            let answer = call()
            gate.release(permit, report: report(answer))
            return answer
        }
    }

    /// What an operation's answer tells the endpoint's circuit (submit's rule, ``SubmitStage/report(_:)``).
    static func report(_ answer: OperationSteps.Answer) -> CircuitState.Report {
        switch answer {
        case .confirmed, .refused: .healthy
        case .notSent(let code, _), .uncertain(let code, _): SubmitStage.report(code)
        }
    }

    static func report<Value>(_ answer: Result<Value, OperationQueryFailure>) -> CircuitState.Report {
        switch answer {
        case .success: .healthy
        case .failure(let failure): SubmitStage.report(failure.code)
        }
    }

    /// The merchant's configured endpoint, nil without a gateway or its transport's (or connector's) credentials.
    static func endpoint(_ merchant: MerchantStore.Merchant) -> GatewayEndpoint? {
        if let gateway = merchant.config.gateway, gateway.connector != .trustPayments {
            return try? GatewayEndpoint.forMerchant(gateway, secrets: merchant.secrets, site: nil).get()
        }
        guard let gateway = merchant.config.gateway, let username = gateway.username, !username.isEmpty,
              let secret = merchant.secrets.gatewaySecret(for: gateway.resolvedTransport), !secret.isEmpty else { return nil }
        return GatewayEndpoint(baseUrl: gateway.baseUrl, siteReference: gateway.siteReference, transport: gateway.resolvedTransport,
                               username: username, secret: secret)
    }

    /// A refund of a payment still recorded `captured` asks the gateway first whether it settled since: a REFUND is
    /// the right request after settlement, a lower `settlebaseamount` (or a void) before it.
    ///
    /// Another connector's "settled" is what makes its refund possible (docs/connectors.md): at OPP a captured payment
    /// (`DB`, or a `PA` with its `CP`: "a refund can be performed against debit (DB) or captured preauthorization
    /// (PA->CP)" [doc: OPP white-label back-office pages]), known without a query; at TapPay a trade the Record API
    /// shows `is_captured` [doc].
    private func learnSettlement(_ message: Message, database: PostgresConnection) throws {
        guard case .request(let request) = message, request.kind == .refund, let entry = try directory.entry(request.merchantId, on: database),
              let endpoint = Self.endpoint(entry.merchant), endpoint.transport == .webservices else { return }
        try learnSettlement(request, endpoint: endpoint, http: HTTPClient(configuration: client.http), database: database)
    }

    private func learnSettlement(_ request: OperationRequest, endpoint: GatewayEndpoint, http: HTTPClient, database: PostgresConnection) throws {
        guard let paymentId = try steps.store.resolvePayment(request.payment, merchantId: request.merchantId, on: database),
              let reference = try steps.settlementCandidate(paymentId, on: database) else { return }
        let requestId = "S\(paymentId.paymentIDText.prefix(8))"
        let currency = try PaymentStore().load(paymentId, on: database)?.currency ?? ""
        let answer: Result<OperationProtocol.QueriedAuth?, OperationQueryFailure> = switch endpoint.connector {
        case .trustPayments:
            gated(endpoint, merchantId: request.merchantId, heldBack: { .failure(OperationQueryFailure(code: $0, reason: $1)) }, report: Self.report) {
                client.queryAuth(transactionReference: reference, endpoint: endpoint, requestId: requestId, using: http)
            }
        case .opp:
            .success(OperationProtocol.QueriedAuth(settleStatus: .settled, settleBaseAmount: nil))
        case .tapPay:
            gated(endpoint, merchantId: request.merchantId, heldBack: { .failure(OperationQueryFailure(code: $0, reason: $1)) }, report: Self.report) {
                connectors.findOperation(.capture(transactionId: reference, amountMinor: 0, currency: currency),
                                         reference: reference, endpoint: endpoint, requestId: requestId, now: Date(), using: http)
                    .map { evidence in
                        guard case .trade(let record?) = evidence, record.isCaptured == true else { return nil }
                        return OperationProtocol.QueriedAuth(settleStatus: .settled, settleBaseAmount: nil)
                    }
            }
        }
        guard case .success(let queried?) = answer else { return }
        try database.transaction { _ = try steps.learnSettlement(paymentId, queried: queried, actor: Self.actor, on: $0) }
    }

    /// A finished operation goes to notification, which sends its event.
    private func report(_ operation: OperationStore.Operation, transaction: PostgresConnection) throws -> StageOutcome {
        guard let paymentId = operation.paymentId, let payment = try PaymentStore().load(paymentId, on: transaction) else { return .completed }
        var messages = [OperationEventMessage(payment: payment.message, operationRowId: operation.id).handOff()]
        if operation.requestedBy == .lateAuthorization, operation.state == .succeeded {
            // The customer is not charged for a payment reported failed: the review closes as failed, notified again.
            let closed = try PaymentStore().transition(
                paymentId, from: .needsReview, to: .failed, actor: Self.actor, errorCode: "late_authorization_voided",
                detail: "the late AUTH was voided automatically (operation \(operation.operationId))", on: transaction)
            if closed == .applied || payment.status == .failed {
                messages.append(OperationEventMessage.notifyHandOff(id: "\(payment.message.paymentId.paymentIDText):notify", body: payment.message.encoded()))
            }
        }
        return .publish(messages)
    }

    /// An operation for review sends nothing: an operator resolves it (its payment takes no other operation meanwhile).
    /// Its message, and any repeat of it, ends in a log line naming the operation.
    private func reviewed(_ operation: OperationStore.Operation) -> StageOutcome {
        .settled(note: "under_review", reason: "operation \(operation.operationId) waits for review; nothing was sent")
    }
}

/// The hand-off of a finished operation to `notify`: a payment's hand-off (``Pipeline/StageMessage``) with one more
/// member, `"operation"` (the operation's row id), on the stages exchange with routing key `notify`. Like a payment's
/// it is a reference only; notify reads the operation and sends its event, not the payment's.
public struct OperationEventMessage: Sendable, Equatable {
    public let payment: StageMessage
    public let operationRowId: Int64

    public init(payment: StageMessage, operationRowId: Int64) {
        self.payment = payment
        self.operationRowId = operationRowId
    }

    public func encoded() -> [UInt8] {
        JSONValue.object([
            ("jobId", .string(payment.jobId)), ("merchantId", .string(payment.merchantId)), ("operation", .integer(operationRowId)),
            ("paymentId", .string(payment.paymentId.paymentIDText)),
        ]).serialized()
    }

    /// The operation row id a hand-off names, nil for a payment's own hand-off.
    public static func operation(in bytes: [UInt8]) -> Int64? {
        guard let object = try? JSONValue.parse(bytes, maxDepth: 4), let id = object["operation"]?.int64Value, id > 0 else { return nil }
        return id
    }

    /// The hand-off as the runtime publishes it: persistent, mandatory, `message_id` `operation:<row id>:notify`.
    public func handOff(at now: Date = Date()) -> OutboundMessage {
        Self.notifyHandOff(id: "operation:\(operationRowId):notify", body: encoded(), at: now)
    }

    /// A message to `notify` through the stages exchange, as a hand-off travels (routing key `notify`).
    static func notifyHandOff(id: String, body: [UInt8], at now: Date = Date()) -> OutboundMessage {
        .event(exchange: PipelineTopology.stagesExchange, type: Stage.notify.rawValue, id: id, body: body, timestamp: now, mandatory: true)
    }
}

// MARK: Upkeep

extension OperationsStage {
    /// Every `PAYPIPE_RECONCILE_INTERVAL`: a manual-capture AUTH the gateway answered pending settlement (settle
    /// status 0 or 1: the `settlestatus "2"` it was sent with not honoured) is suspended by a TRANSACTIONUPDATE
    /// `{"settlestatus":"2"}` before the gateway's daily settlement run takes it. The update sets an absolute value, so
    /// sending it again (a lost answer, two workers) changes nothing more; the settle status learnt is recorded.
    public func upkeep(database: PostgresConnection, logger: Logger) throws {
        try suspendUnsuspended(database: database, logger: logger)
        try pollSettlement(database: database, logger: logger)
    }

    /// Settlement learnt by batched TRANSACTIONQUERY: captured payments whose query is due (``SettlementSchedule``:
    /// after the AUTH's `settleduedate` has passed, then every `PAYPIPE_SETTLEMENT_POLL`; without a due date, one
    /// interval after the capture), one query per merchant for up to 500 of them; settled (100) ones become `settled`,
    /// so refunds are REFUNDs; cancelled (3) or any other status is recorded as the last learnt. The SQL selects a
    /// superset of the due ones (either rule's bound passed); the schedule decides.
    func pollSettlement(database: PostgresConnection, logger: Logger) throws {
        let byMerchant = try settlementDue(database: database)
        let http = HTTPClient(configuration: client.http)
        for (merchantId, payments) in byMerchant {
            guard let merchant = try directory.entry(merchantId, on: database)?.merchant, let endpoint = Self.endpoint(merchant),
                  endpoint.connector == .trustPayments, endpoint.transport == .webservices else { continue }
            var references: [String: UUID] = [:]
            for payment in payments {
                if let facts = try steps.store.gatewayFacts(paymentId: payment, on: database) { references[facts.transactionReference] = payment }
            }
            let answer = gated(endpoint, merchantId: merchantId, heldBack: { .failure(OperationQueryFailure(code: $0, reason: $1)) },
                               report: Self.report) {
                client.queryAuths(transactionReferences: Array(references.keys), endpoint: endpoint, requestId: "S\(merchantId.prefix(8))", using: http)
            }
            guard case .success(let found) = answer else {
                logger.warning("settlement_query_failed", [("merchantId", .string(merchantId))])
                continue
            }
            for (reference, payment) in references {
                try database.transaction { transaction in
                    if let queried = found[reference] {
                        _ = try steps.learnSettlement(payment, queried: queried, actor: Self.actor, on: transaction)
                    } else {
                        try PaymentStore().markSettlementChecked(payment, on: transaction)
                    }
                }
            }
        }
    }

    /// The captured Trust Payments payments whose settlement query is due, by merchant. Other connectors' payments are
    /// never selected: their settlement is learnt when a refund needs it, and selecting them every round would crowd
    /// Trust Payments' out of the 500.
    func settlementDue(database: PostgresConnection) throws -> [String: [UUID]] {
        let rows = try database.query(
            """
            SELECT p.id, p.merchant_id, p.settle_checked_at, p.updated_at, clock_timestamp() AS now,
                   (SELECT to_char(a.settle_due_date, 'YYYY-MM-DD') FROM gateway_attempts a
                    WHERE a.payment_id = p.id AND a.settle_due_date IS NOT NULL AND a.outcome IN ('authorized', 'found')
                    ORDER BY a.id DESC LIMIT 1) AS due
            FROM payments p JOIN merchants m ON m.id = p.merchant_id
            WHERE p.lifecycle = 'captured'
              AND lower(translate(coalesce(m.config->'gateway'->>'type', ''), '-_', '')) NOT IN ('opp', 'aci', 'acioppwa', 'oppwa', 'tappay')
              AND (coalesce(p.settle_checked_at, p.updated_at) < clock_timestamp() - make_interval(secs => $1)
                   OR EXISTS (SELECT 1 FROM gateway_attempts a WHERE a.payment_id = p.id
                              AND (a.settle_due_date + 1)::timestamp <= (clock_timestamp() AT TIME ZONE 'UTC')))
            ORDER BY p.merchant_id, p.settle_checked_at NULLS FIRST LIMIT 500
            """, [settlementPoll])
        var byMerchant: [String: [UUID]] = [:]
        for row in rows where SettlementSchedule.isDue(
            now: try row.decode("now", as: Date.self), dueDate: try row.decode("due", as: String?.self),
            lastQueried: try row.decode("settle_checked_at", as: Date?.self), capturedAt: try row.decode("updated_at", as: Date.self), poll: settlementPoll) {
            byMerchant[try row.decode("merchant_id", as: String.self), default: []].append(try row.decode("id", as: UUID.self))
        }
        return byMerchant
    }

    func suspendUnsuspended(database: PostgresConnection, logger: Logger) throws {
        let rows = try database.query(
            """
            SELECT p.id, p.merchant_id FROM payments p
            WHERE p.lifecycle = 'authorized' AND p.capture_mode = 'manual'
              AND coalesce(p.settle_status, (SELECT a.settle_status FROM gateway_attempts a
                                             WHERE a.payment_id = p.id AND a.transaction_reference IS NOT NULL AND a.outcome IN ('authorized', 'found')
                                             ORDER BY a.id DESC LIMIT 1)) IN ('0', '1')
            ORDER BY p.updated_at LIMIT 50
            """)
        let http = HTTPClient(configuration: client.http)
        for row in rows {
            let paymentId = try row.decode("id", as: UUID.self)
            let merchantId = try row.decode("merchant_id", as: String.self)
            guard let merchant = try directory.entry(merchantId, on: database)?.merchant, let endpoint = Self.endpoint(merchant),
                  endpoint.connector == .trustPayments, endpoint.transport == .webservices,
                  let facts = try steps.store.gatewayFacts(paymentId: paymentId, on: database) else { continue }
            let answer = gated(endpoint, merchantId: merchantId, heldBack: { OperationSteps.Answer.notSent(code: $0, reason: $1) }, report: Self.report) {
                client.operate(.suspend(facts.transactionReference), endpoint: endpoint, requestId: "U\(paymentId.paymentIDText.prefix(8))",
                               window: nil, using: http)
            }
            guard case .confirmed = answer else {
                logger.warning("manual_capture_suspend_failed", [("paymentId", .string(paymentId.paymentIDText)), ("answer", .string("\(answer)"))])
                continue
            }
            try PaymentStore().recordSettleStatus(paymentId, .suspended, on: database)
            logger.info("manual_capture_suspended", [("paymentId", .string(paymentId.paymentIDText))])
        }
    }
}
