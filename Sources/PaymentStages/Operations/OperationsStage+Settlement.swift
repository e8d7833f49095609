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
        var calls: [(index: Int, call: OperationUpkeep.Call)] = [], endpoints: [String: GatewayEndpoint] = [:]
        for (index, message) in wave.enumerated() {
            do {
                guard let (call, endpoint) = try settlementCall(message, database: database) else { continue }
                calls.append((index, call))
                endpoints[call.merchantId] = endpoint
            } catch {
                results[index] = .failure(FailureClassifier.classify(error))
            }
        }
        guard !calls.isEmpty else { return results }
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

    /// The settlement query a refund needs first, with its endpoint: nil for anything else, or a payment not
    /// `captured`.
    private func settlementCall(_ message: Message, database: PostgresConnection) throws -> (OperationUpkeep.Call, GatewayEndpoint)? {
        guard case .request(let request) = message, request.kind == .refund, let entry = try directory.entry(request.merchantId, on: database),
              let endpoint = Self.endpoint(entry.merchant) else { return nil }
        let connector = connectors.connector(endpoint.connector)
        guard connector.upkeep(endpoint).learnsSettlementBeforeRefund,
              let paymentId = try steps.store.resolvePayment(request.payment, merchantId: request.merchantId, on: database),
              let reference = try steps.settlementCandidate(paymentId, on: database) else { return nil }
        let currency = connector.operationNeeds.contains(.currency) ? try PaymentStore().load(paymentId, on: database)?.currency ?? "" : ""
        let payment = OperationUpkeep.Payment(id: paymentId, merchantId: request.merchantId, transactionReference: reference, currency: currency)
        return OperationUpkeep.settlementBeforeRefund(payment, capabilities: connector.upkeep(endpoint)).map { ($0, endpoint) }
    }
}
