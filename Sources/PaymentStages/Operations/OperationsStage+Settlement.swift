import Foundation
import Pipeline
import Postgres

/// Settlement learnt before a refund, for a wave at a time: read, decide (``OperationUpkeep/settlementBeforeRefund``),
/// call out (the runtime's pool and endpoint gate), apply (one transaction).
///
/// A refund of a payment still recorded `captured` asks the processor first whether it settled since: at a
/// settlement-updates processor a refund is the right request after settlement, a lower settle amount (or a void)
/// before it; at another, "settled" is what makes its refund possible (docs/connectors.md), as its connector answers
/// (``OperationConnector/querySettlement(_:endpoint:requestId:now:using:)``).
extension OperationsStage {
    /// One result per message: a failure only when reading or applying failed (a failed query changes nothing: the
    /// refund is then decided on what is recorded).
    func learnSettlement(_ wave: [Message], database: PostgresConnection) -> [Result<Void, StageFailure>] {
        var results = [Result<Void, StageFailure>](repeating: .success(()), count: wave.count)
        let refunds: [Refund], calls: [(index: Int, call: OperationUpkeep.Call)]
        do {
            let found = try self.refunds(wave, database: database)
            // A refund whose merchant cannot be loaded fails alone; the others go on.
            for (index, failure) in found.unavailable { results[index] = .failure(failure) }
            refunds = found.refunds
            calls = try settlementCalls(refunds, database: database)
        } catch {
            // The wave's reads are shared: every refund that might have needed one is retried.
            for index in wave.indices where Self.isRefund(wave[index]) { results[index] = .failure(FailureClassifier.classify(error)) }
            return results
        }
        guard !calls.isEmpty else { return results }
        let endpoints = Dictionary(refunds.map { ($0.request.merchantId, $0.endpoint) }, uniquingKeysWith: { first, _ in first })
        let answers = carryOut(calls.map(\.call), endpoints: endpoints, now: Date())
        let writes = zip(calls, answers).flatMap { OperationUpkeep.writes($0.call, $1, markUnanswered: false) }
        guard !writes.isEmpty else { return results }
        do {
            try database.transaction { try apply(writes, on: $0) }
        } catch {
            for (index, _) in calls { results[index] = .failure(FailureClassifier.classify(error)) }
        }
        return results
    }

    static func isRefund(_ message: Message) -> Bool {
        if case .request(let request) = message { request.kind == .refund } else { false }
    }

    /// A refund of the wave whose connector learns settlement before a refund, with its merchant's endpoint.
    struct Refund {
        let index: Int
        let request: OperationRequest
        let endpoint: GatewayEndpoint
        let capabilities: UpkeepCapabilities
        let needsCurrency: Bool
    }

    /// The wave's refunds that learn settlement first, their merchants looked up once (at most two statements,
    /// ``MerchantDirectory/lookups(_:on:)``), and the refunds whose merchant's configuration cannot be loaded, with
    /// their failure.
    private func refunds(_ wave: [Message], database: PostgresConnection) throws
        -> (refunds: [Refund], unavailable: [(index: Int, failure: StageFailure)]) {
        let requests = wave.enumerated().compactMap { index, message -> (index: Int, request: OperationRequest)? in
            guard case .request(let request) = message, request.kind == .refund else { return nil }
            return (index, request)
        }
        guard !requests.isEmpty else { return ([], []) }
        let merchants = try directory.lookups(requests.map(\.request.merchantId), on: database)
        var refunds: [Refund] = [], unavailable: [(index: Int, failure: StageFailure)] = []
        for (index, request) in requests {
            switch merchants[request.merchantId] ?? .unknown {
            case .unavailable(let failure): unavailable.append((index, failure))
            case .unknown: continue
            case .found(let entry):
                guard let endpoint = Self.endpoint(entry.merchant) else { continue }
                let connector = connectors.connector(endpoint.connector)
                let capabilities = connector.upkeep(endpoint)
                guard capabilities.learnsSettlementBeforeRefund else { continue }
                refunds.append(Refund(index: index, request: request, endpoint: endpoint, capabilities: capabilities,
                                      needsCurrency: connector.operationNeeds.contains(.currency)))
            }
        }
        return (refunds, unavailable)
    }

    /// The settlement queries the wave's refunds need first (``OperationUpkeep/settlementBeforeRefund(_:capabilities:)``),
    /// on one read for the wave: their payments resolved in one statement, the `captured` ones (the only lifecycle
    /// settlement changes) read in one, their AUTH references in one.
    private func settlementCalls(_ refunds: [Refund], database: PostgresConnection) throws -> [(index: Int, call: OperationUpkeep.Call)] {
        guard !refunds.isEmpty else { return [] }
        let resolved = try steps.store.resolvePayments(refunds.map { ($0.request.merchantId, $0.request.payment) }, on: database)
        let captured = try database.query("SELECT id, merchant_id, currency FROM payments WHERE id = ANY($1::uuid[]) AND lifecycle = 'captured'",
                                          [PostgresArray(resolved.compactMap { $0 })]).withFacts(steps.store, database: database)
        let candidates = try Dictionary(captured.map { payment, row in (payment.id, (payment, try row.decode("currency", as: String?.self))) },
                                        uniquingKeysWith: { first, _ in first })
        return zip(refunds, resolved).compactMap { refund, paymentId in
            guard let paymentId, let (found, currency) = candidates[paymentId] else { return nil }
            var payment = found
            payment.currency = refund.needsCurrency ? currency ?? "" : ""
            return OperationUpkeep.settlementBeforeRefund(payment, capabilities: refund.capabilities).map { (refund.index, $0) }
        }
    }

    // MARK: Shared with the upkeep round (``OperationsUpkeepRound``)

    /// The upkeep's calls (the round's, and a wave's settlement queries before its refunds) on the call-out pool, each
    /// through the endpoint gate (a circuit per endpoint URL, the merchant's slots); one held back is not made and
    /// writes nothing.
    func carryOut(_ calls: [OperationUpkeep.Call], endpoints: [String: GatewayEndpoint], now: Date) -> [OperationUpkeep.Answer] {
        let connectors = connectors, merchantCalls = calls.map { ($0, endpoints[$0.merchantId]!) }
        let heldBack = { @Sendable (index: Int, reason: HeldBack) -> OperationUpkeep.Answer in
            let (code, detail) = self.heldBack(reason, merchantId: merchantCalls[index].0.merchantId)
            switch merchantCalls[index].0 {
            case .suspend: return .suspended(.notSent(code: code, reason: detail))
            case .querySettlement: return .settlement(.failure(OperationQueryFailure(code: code, reason: detail)))
            }
        }
        return callOut.perform(
            calls.count, window: nil,
            gating: { GatedCall(EndpointGate.Call(endpoint: merchantCalls[$0].1.url, owner: merchantCalls[$0].0.merchantId)) },
            call: { index, http in
                let (call, endpoint) = merchantCalls[index]
                let connector = connectors.connector(endpoint.connector)
                switch call {
                case .suspend(let payment):
                    let answer = connector.suspend(transactionReference: payment.transactionReference, endpoint: endpoint, requestId: call.requestId, using: http)
                    return (.suspended(answer), Self.report(answer))
                case .querySettlement(_, let payments):
                    let answer = connector.querySettlement(payments.map(\.query), endpoint: endpoint, requestId: call.requestId, now: now, using: http)
                    return (.settlement(answer), Self.report(answer))
                }
            },
            heldBack: heldBack)
    }

    /// The upkeep's writes (the round's, and what a wave's settlement queries learnt), in the caller's transaction,
    /// set-based: the payments whose settlement was learnt locked and read in one statement, the writes decided on them
    /// (``OperationUpkeep/applying(_:money:)``), then one statement for the lifecycle changes and one for the settle
    /// statuses.
    func apply(_ writes: [OperationUpkeep.Write], on transaction: PostgresConnection) throws {
        let learnt = writes.compactMap { write -> UUID? in if case .learnt(let payment, _) = write { payment } else { nil } }
        let locked = try PaymentStore().lock(Array(Set(learnt)), on: transaction)
        let applying = try OperationUpkeep.applying(writes, money: locked.mapValues(\.money))
        // A change the payment no longer matches is left out by the statement (a race: learnt again next poll).
        _ = try PaymentStore().changeLifecycles(applying.lifecycles, actor: Self.actor, on: transaction)
        try PaymentStore().recordSettleStatuses(applying.learnt.map { ($0.paymentId, $0.settleStatus) }, on: transaction)
    }
}

extension PostgresRows {
    /// The selected payments with their AUTH's reference, read for all of them in one statement
    /// (``OperationStore/gatewayFacts(paymentIds:on:)``); a payment without one is left out.
    func withFacts(_ store: OperationStore, database: PostgresConnection) throws -> [(payment: OperationUpkeep.Payment, row: PostgresRow)] {
        let ids = try map { try $0.decode("id", as: UUID.self) }
        let facts = try store.gatewayFacts(paymentIds: ids, on: database)
        return try zip(ids, self).compactMap { id, row in
            guard let facts = facts[id] else { return nil }
            return (OperationUpkeep.Payment(id: id, merchantId: try row.decode("merchant_id", as: String.self), transactionReference: facts.transactionReference,
                                            traceparent: row.hasColumn("trace_parent") ? try row.decode("trace_parent", as: String?.self) : nil), row)
        }
    }
}
