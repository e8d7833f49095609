import Foundation
import Pipeline
import Postgres

/// Phase 1 of a round: the merchants' requests read together under their payments' locks and each decided purely
/// (``OperationSteps/plan(_:clock:on:)``, on the rules of ``OperationProtocol``), the reconciler's automatic voids
/// among them, with the batch's clocks read once and passed in; what is to be sent is committed (the operation
/// `requested`, its attempt `sending`) before any call. Invalid operations are recorded refused in one statement, the
/// sends of merchants without gateway credentials refused `gateway_not_configured` together (one round of answers), and
/// the capture references the round's refunds need are read in one.
extension OperationsStage {
    public func prepare(_ batch: [Message], window: SendWindow?, transaction: PostgresConnection) throws -> [Prepared<Call>] {
        let clock = try BatchClock.read(transaction)
        // The merchants' requests and the automatic voids are planned together on one batch read (``OperationSteps/plan(_:clock:on:)``).
        var requests: [(index: Int, merchant: Merchant, planning: OperationSteps.Planning)] = []
        var results = [Prepared<Call>?](repeating: nil, count: batch.count)
        var unusable: [OperationStore.Refusal] = []
        // The round's merchants, looked up once (at most two statements, ``MerchantDirectory/lookups(_:on:)``).
        let merchants = try directory.lookups(batch.compactMap { message -> String? in
            switch message {
            case .request, .reconciled: message.merchantId
            case .invalid: nil
            }
        }, on: transaction)
        // The message's merchant, or its result when none is configured or its configuration cannot be loaded (that
        // merchant's messages fail alone).
        func merchant(_ id: String, at index: Int) -> Merchant? {
            switch merchants[id] ?? .unknown {
            case .found(let entry):
                return entry.merchant
            case .unknown:
                results[index] = .failed(.unattributable(code: "unknown_merchant", reason: "merchant \(id) is not configured"))
            case .unavailable(let failure):
                results[index] = .failed(failure)
            }
            return nil
        }
        for (index, message) in batch.enumerated() {
            switch message {
            case .request(let request):
                guard let merchant = merchant(request.merchantId, at: index) else { continue }
                requests.append((index, merchant, OperationSteps.Planning(request: request, transport: transport(merchant), timing: timing(merchant))))
            case .invalid(let kind, let merchantId, let operationId, let reason):
                // Recorded failed (audit; the id is then taken) and dead-lettered with the reason: with no payment it
                // names, there is no webhook target to report it to. Recorded so that no usable operation can ever read
                // as a repeat of it (``OperationRequest/unusable(kind:operationId:merchantId:reason:)``). The round's
                // in one statement.
                unusable.append(OperationStore.Refusal(request: .unusable(kind: kind, operationId: operationId, merchantId: merchantId, reason: reason),
                                                       paymentId: nil, code: "invalid_job", reason: reason))
                results[index] = .failed(.unattributable(code: "invalid_job", reason: "operation \(operationId): \(reason)"))
            case .reconciled(let payment):
                guard let merchant = merchant(payment.merchantId, at: index) else { continue }
                requests.append((index, merchant, .automaticVoid(payment, transport: transport(merchant), timing: timing(merchant))))
            }
        }
        _ = try steps.store.refuse(unusable, on: transaction)
        let round = try steps.plan(requests.map(\.planning), clock: clock, on: transaction)
        let captures = try captureReferences(zip(requests.map(\.merchant), round.plans), on: transaction)
        var unconfigured: [(index: Int, answering: OperationSteps.Answering)] = []
        for (request, plan) in zip(requests, round.plans) {
            switch try prepare(plan, merchant: request.merchant, clock: clock, payments: round.payments, captures: captures, transaction: transaction) {
            case .prepared(let prepared): results[request.index] = prepared
            case .refused(let answering): unconfigured.append((request.index, answering))
            }
        }
        // The sends with nothing to send them to, refused together as one round of answers (the record phase's
        // ``OperationSteps/settle(_:queries:actor:clock:on:)``: one write per table), each reported as it is recorded.
        let refused = try steps.settle(unconfigured.map(\.answering), actor: Self.actor, clock: clock, on: transaction)
        for (refusal, settled) in zip(unconfigured, refused.settled) {
            let payment = refusal.answering.operation.paymentId.flatMap { refused.payments[$0] }
            switch try recorded(settled, payment: payment, transaction: transaction) {
            case .decided(let result): results[refusal.index] = .decided(result)
            case .again: results[refusal.index] = .failed(Self.unsettled)
            }
        }
        return results.map { $0! }
    }

    /// What one message's plan leads to in the prepare: a call or a result, or a send refused for want of gateway
    /// credentials (recorded with the round's other such refusals).
    private enum Step {
        case prepared(Prepared<Call>)
        case refused(OperationSteps.Answering)
    }

    /// The send window and settle time of a new attempt at the merchant's endpoint.
    private func timing(_ merchant: Merchant) -> OperationStore.SendTiming {
        OperationStore.SendTiming(
            sendWindow: sendWindow, settleSeconds: (Self.endpoint(merchant).map { connectors.totalTimeout(for: $0) } ?? connectors.totalTimeout) + reconcileGrace)
    }

    /// One message's plan and what it leads to: a call, or a result, or (a request with nothing to send it to) its
    /// refusal `gateway_not_configured`, settled with the round's others in the same transaction.
    private func prepare(
        _ plan: OperationSteps.Plan, merchant: Merchant, clock: BatchClock, payments: [UUID: PaymentRecord], captures: [UUID: String],
        transaction: PostgresConnection
    ) throws -> Step {
        let transport = transport(merchant)
        let endpoint = Self.endpoint(merchant)
        switch plan {
        case .wait(let code, let reason, let until):
            return .prepared(.failed(Self.retried(code: code, reason: reason, until: until)))
        case .nothing(let reason):
            return .prepared(.finished(.settled(note: "nothing_to_do", reason: reason)))
        case .conflict(let existing):
            return .prepared(.failed(.unattributable(code: "operation_conflict",
                                                     reason: "operationId \(existing.operationId) was used for another \(existing.kind.rawValue) (operation \(existing.id))")))
        case .finished(let operation):
            guard operation.paymentId != nil else {
                // A repeat of an operation recorded without a payment has no webhook target: it is dead-lettered with
                // the recorded code, never acknowledged without a trace.
                return .prepared(.failed(.unattributable(
                    code: operation.errorCode ?? "operation_failed",
                    reason: "operation \(operation.operationId) was recorded failed without a payment: \(operation.errorMessage ?? "no reason")")))
            }
            return .prepared(.finished(try report(operation, transaction: transaction)))
        case .review(let operation):
            return .prepared(.finished(reviewed(operation)))
        case .send(let operation, let attempt, let request):
            guard let endpoint else {
                let refusal = OperationSteps.Answer.refused(code: "gateway_not_configured",
                                                            message: "merchant \(merchant.id) has no gateway credentials for its transport")
                return .refused(OperationSteps.Answering(operation: operation, attempt: attempt, answer: refusal, transport: transport))
            }
            let planned = try self.planned(operation, attempt: attempt, request: request, endpoint: endpoint, transport: transport, clock: clock,
                                           payments: payments, captures: captures, database: transaction)
            return .prepared(.call(.send(planned, request: request)))
        case .query(let operation, let attempt, _):
            guard let endpoint, let request = operation.request else {
                return .prepared(.failed(.transient(code: "gateway_not_configured", reason: "no gateway credentials to query with")))
            }
            let planned = try self.planned(operation, attempt: attempt, request: request, endpoint: endpoint, transport: transport, clock: clock,
                                           payments: payments, captures: captures, database: transaction)
            return .prepared(.call(.query(planned, request: request)))
        }
    }

    /// The call's context as its connector needs it (``OperationConnector/operationNeeds``): the operation's own
    /// reference, and only where needed the payment's currency and the id its capture was given (a refund at a
    /// processor that refunds the capture).
    private func planned(
        _ operation: OperationStore.Operation, attempt: Int64, request: GatewayOperation, endpoint: GatewayEndpoint,
        transport: OperationProtocol.Transport, clock: BatchClock, payments: [UUID: PaymentRecord], captures: [UUID: String],
        database: PostgresConnection
    ) throws -> Planned {
        let connector = connectors.connector(endpoint.connector)
        let needs = connector.operationNeeds
        let paymentReference = operation.paymentId?.paymentIDText ?? operation.operationId
        var context = OperationContext(reference: connector.operationReference(paymentReference: paymentReference, operationRowId: operation.id))
        if let paymentId = operation.paymentId {
            if needs.contains(.currency) { context.currency = try (payments[paymentId] ?? PaymentStore().load(paymentId, on: database))?.currency ?? "" }
            if needs.contains(.captureReference), case .refund = request { context.capture = captures[paymentId] }
        }
        return Planned(operation: operation, attempt: attempt, endpoint: endpoint, transport: transport, context: context, clock: clock)
    }

    /// The capture references the round's refunds need (``OperationNeeds/captureReference``: a refund at a processor
    /// that refunds the capture), read in one statement; none read when no refund to send or query needs one.
    private func captureReferences(
        _ plans: some Sequence<(Merchant, OperationSteps.Plan)>, on transaction: PostgresConnection
    ) throws -> [UUID: String] {
        let refunded = plans.compactMap { merchant, plan -> UUID? in
            let operation: OperationStore.Operation
            switch plan {
            case .send(let sent, _, _), .query(let sent, _, _): operation = sent
            default: return nil
            }
            guard case .refund? = operation.request, let endpoint = Self.endpoint(merchant),
                  connectors.connector(endpoint.connector).operationNeeds.contains(.captureReference) else { return nil }
            return operation.paymentId
        }
        return try steps.store.captureReferences(paymentIds: refunded, on: transaction)
    }

    /// How the protocol reaches the merchant's gateway, as its connector says (``OperationConnector/operationTransport(_:)``).
    func transport(_ merchant: Merchant) -> OperationProtocol.Transport {
        guard let gateway = merchant.config.gateway else { return ConnectorRegistry.fallbackOperationTransport }
        return connectors.connector(gateway.connector).operationTransport(gateway)
    }

    /// The merchant's configured endpoint, nil without a gateway or its transport's (or connector's) credentials.
    static func endpoint(_ merchant: Merchant) -> GatewayEndpoint? {
        try? GatewayEndpoint.forMerchant(merchant.config.gateway, secrets: merchant.secrets, site: nil).get()
    }
}
