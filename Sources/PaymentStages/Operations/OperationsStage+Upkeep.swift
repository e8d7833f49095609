import Foundation
import HTTP
import Pipeline
import Postgres

/// The upkeep, every `PAYPIPE_RECONCILE_INTERVAL`, in the stage's shape: read (one query set, the database's time
/// once), decide (``OperationUpkeep``), call out (the runtime's pool and endpoint gate), apply (one transaction).
///
/// - A manual-capture AUTH the processor answered pending settlement (settle status 0 or 1: the suspension it was
///   sent with not honoured) is suspended before the processor's settlement run takes it. A suspension (its
///   connector's, ``OperationConnector/suspend(transactionReference:endpoint:requestId:using:)``) sets an absolute
///   value, so sending it again (a lost answer, two workers) changes nothing more.
/// - Settlement is learnt by batched queries: captured payments whose query is due (``SettlementSchedule``: after the
///   AUTH's `settleduedate` has passed, then every `PAYPIPE_SETTLEMENT_POLL`; without a due date, one interval after
///   the capture), one query per merchant for up to 500 of them; settled ones become `settled`, so refunds are
///   refunds proper, not a lower settle amount; any other status is recorded as the last learnt.
extension OperationsStage {
    public func upkeep(database: PostgresConnection, logger: Logger) throws {
        let clock = try BatchClock.read(database)
        let suspensions = try suspensionCandidates(database: database)
        let captured = try settlementCandidates(database: database, clock: clock)
        let endpoints = try self.endpoints(Set(suspensions.map(\.merchantId) + captured.map(\.payment.merchantId)), database: database, logger: logger)
        let capabilities = { (merchant: String) in endpoints[merchant].map { connectors.connector($0.connector).upkeep($0) } }
        let suspend = OperationUpkeep.suspensions(suspensions, capabilities: capabilities)
        let poll = OperationUpkeep.settlementQueries(captured, now: clock.database, poll: settlementPoll, capabilities: capabilities)
        let answers = carryOut(suspend + poll, endpoints: endpoints, now: clock.worker)
        var writes: [OperationUpkeep.Write] = []
        for (call, answer) in zip(suspend + poll, answers) {
            writes += OperationUpkeep.writes(call, answer, markUnanswered: true)
            switch (call, answer) {
            case (.suspend(let payment), .suspended(.confirmed)):
                logger.info("manual_capture_suspended", [("paymentId", .string(payment.id.paymentIDText))] + TraceContext.logFields(traceparent: payment.traceparent))
            case (.suspend(let payment), .suspended(let answer)):
                logger.warning("manual_capture_suspend_failed", [("paymentId", .string(payment.id.paymentIDText)), ("answer", .string("\(answer)"))]
                               + TraceContext.logFields(traceparent: payment.traceparent))
            case (.querySettlement(let merchantId, _), .settlement(.failure)):
                logger.warning("settlement_query_failed", [("merchantId", .string(merchantId))])
            default:
                break
            }
        }
        try database.transaction { try apply(writes, on: $0) }
        deferredMetrics.awaiting(try PaymentStore().awaitingAmountCount(on: database))
        try merchantTokens?.run(database: database, logger: logger)
    }

    /// The upkeep's calls on the call-out pool, each through the endpoint gate (a circuit per endpoint URL, the
    /// merchant's slots); one held back is not made and writes nothing.
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

    /// The upkeep's writes, in the caller's transaction, set-based: the payments whose settlement was learnt locked and
    /// read in one statement, the writes decided on them (``OperationUpkeep/applying(_:money:)``), then one statement
    /// for the lifecycle changes and one for the settle statuses.
    func apply(_ writes: [OperationUpkeep.Write], on transaction: PostgresConnection) throws {
        let learnt = writes.compactMap { write -> UUID? in if case .learnt(let payment, _) = write { payment } else { nil } }
        let locked = try PaymentStore().lock(Array(Set(learnt)), on: transaction)
        let applying = try OperationUpkeep.applying(writes, money: locked.mapValues(\.money))
        // A change the payment no longer matches is left out by the statement (a race: learnt again next poll).
        _ = try PaymentStore().changeLifecycles(applying.lifecycles, actor: Self.actor, on: transaction)
        try PaymentStore().recordSettleStatuses(applying.learnt.map { ($0.paymentId, $0.settleStatus) }, on: transaction)
    }

    /// Each merchant's configured endpoint, the pass's merchants looked up once (at most two statements,
    /// ``MerchantDirectory/lookups(_:on:)``). Merchants without one are left out (nothing can be sent for them), and so
    /// are unknown ones and those whose configuration cannot be loaded: their payments alone wait for a later pass, and
    /// an unloadable one is logged each pass (`merchant_unavailable`), so the wait is not silent.
    func endpoints(_ merchants: Set<String>, database: PostgresConnection, logger: Logger) throws -> [String: GatewayEndpoint] {
        guard !merchants.isEmpty else { return [:] }
        return try directory.lookups(merchants, on: database).reduce(into: [:]) { endpoints, lookup in
            switch lookup.value {
            case .found(let entry): endpoints[lookup.key] = Self.endpoint(entry.merchant)
            case .unknown: break
            case .unavailable(let failure):
                logger.warning("merchant_unavailable", [("merchantId", .string(lookup.key)), ("code", .string(failure.code))])
            }
        }
    }

    // MARK: Reads

    /// Manual-capture payments still authorised whose AUTH is known pending settlement (0 or 1), oldest first, with
    /// their AUTH's reference (``OperationStore/gatewayFacts(paymentId:on:)``).
    func suspensionCandidates(database: PostgresConnection) throws -> [OperationUpkeep.Payment] {
        try database.query(
            """
            SELECT p.id, p.merchant_id, p.trace_parent FROM payments p
            WHERE p.lifecycle = 'authorized' AND p.capture_mode = 'manual'
              AND coalesce(p.settle_status, (SELECT a.settle_status FROM gateway_attempts a
                                             WHERE a.payment_id = p.id AND a.transaction_reference IS NOT NULL AND a.outcome IN ('authorized', 'found')
                                             ORDER BY a.id DESC LIMIT 1)) IN ('0', '1')
            ORDER BY p.updated_at LIMIT 50
            """).withFacts(steps.store, database: database).map { $0.payment }
    }

    /// Captured payments of connectors that poll settlement, whose query may be due: a superset of the due ones
    /// (either rule's bound passed at the batch's database time); ``OperationUpkeep/settlementQueries`` decides. Which
    /// merchants' gateway types poll is decided in Swift (``OperationConnector/pollsSettlement``) and passed as data:
    /// other connectors' payments are never selected (their settlement is learnt when a refund needs it), or they would
    /// crowd the polling ones out of the 500.
    func settlementCandidates(database: PostgresConnection, clock: BatchClock) throws -> [OperationUpkeep.Captured] {
        let types = try database.query("SELECT DISTINCT coalesce(config->'gateway'->>'type', '') AS type FROM merchants")
            .map { try $0.decode("type", as: String.self) }
            .filter { type in
                // A document without a known type is the registry's fallback connector's (docs/merchant-config.md), as
                // its endpoint is.
                connectors.connector(ConnectorKind(gatewayType: type) ?? ConnectorRegistry.fallback).pollsSettlement
            }
        guard !types.isEmpty else { return [] }
        return try database.query(
            """
            SELECT p.id, p.merchant_id, p.settle_checked_at, p.updated_at,
                   (SELECT to_char(d.settle_due_date, 'YYYY-MM-DD') FROM gateway_attempts d
                    WHERE d.payment_id = p.id AND d.settle_due_date IS NOT NULL AND d.outcome IN ('authorized', 'found')
                    ORDER BY d.id DESC LIMIT 1) AS due
            FROM payments p JOIN merchants m ON m.id = p.merchant_id
            WHERE p.lifecycle = 'captured' AND coalesce(m.config->'gateway'->>'type', '') = ANY($3::text[])
              AND (coalesce(p.settle_checked_at, p.updated_at) < $2::timestamptz - make_interval(secs => $1)
                   OR EXISTS (SELECT 1 FROM gateway_attempts d WHERE d.payment_id = p.id
                              AND (d.settle_due_date + 1)::timestamp <= ($2::timestamptz AT TIME ZONE 'UTC')))
            ORDER BY p.merchant_id, p.settle_checked_at NULLS FIRST LIMIT 500
            """, [settlementPoll, clock.database, PostgresArray(types)]).withFacts(steps.store, database: database).map { payment, row in
            OperationUpkeep.Captured(payment: payment,
                                     dueDate: try row.decode("due", as: String?.self), lastQueried: try row.decode("settle_checked_at", as: Date?.self),
                                     capturedAt: try row.decode("updated_at", as: Date.self))
        }
    }

    /// The captured payments of polling connectors whose settlement query is due now, by merchant (before each
    /// merchant's endpoint is asked whether it can be polled).
    func settlementDue(database: PostgresConnection) throws -> [String: [UUID]] {
        let clock = try BatchClock.read(database)
        let captured = try settlementCandidates(database: database, clock: clock)
        var due: [String: [UUID]] = [:]
        for case .querySettlement(let merchant, let payments) in OperationUpkeep.settlementQueries(
            captured, now: clock.database, poll: settlementPoll, capabilities: { _ in UpkeepCapabilities(pollsSettlement: true) }) {
            due[merchant, default: []] += payments.map(\.id)
        }
        return due
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
