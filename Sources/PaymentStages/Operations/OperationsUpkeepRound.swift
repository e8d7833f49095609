import Foundation
import HTTP
import Pipeline
import Postgres

/// The operations worker's upkeep round, every `PAYPIPE_RECONCILE_INTERVAL` on the reconciler thread, in the stage's
/// shape: read (one query set, the database's time once), decide (``OperationUpkeep``), call out (the runtime's pool
/// and endpoint gate), apply (one transaction).
///
/// - A manual-capture AUTH the processor answered pending settlement (settle status 0 or 1: the suspension it was
///   sent with not honoured) is suspended before the processor's settlement run takes it. A suspension (its
///   connector's, ``OperationConnector/suspend(transactionReference:endpoint:requestId:using:)``) sets an absolute
///   value, so sending it again (a lost answer, two workers) changes nothing more.
/// - Settlement is learnt by batched queries: captured payments whose query is due (``SettlementSchedule``: after the
///   AUTH's `settleduedate` has passed, then every `PAYPIPE_SETTLEMENT_POLL`; without a due date, one interval after
///   the capture), one query per merchant for up to 500 of them; settled ones become `settled`, so refunds are
///   refunds proper, not a lower settle amount; any other status is recorded as the last learnt.
///
/// Not a payment's path: the launch wires it (`OperationsStageLaunch.swift`, ``OperationsWorker/upkeepRound``), and the
/// worker's ``OperationsWorker/upkeep(database:logger:)`` runs it. Its calls and writes are the stage's (its call-out
/// phase, endpoint gate and settlement writes, shared with the settlement learnt before a refund), so it holds the stage.
/// Its metrics are the merchant-token puller's (``MerchantTokenMetrics``); the round also sets
/// `paypipe_payments_awaiting_amount` (``deferredMetrics``, the worker's deferred series).
public struct OperationsUpkeepRound: StageHandlerUpkeep, Sendable {
    /// The stage the round calls out and writes through: its merchants, connectors, call-out phase and store.
    let stage: OperationsStage
    /// Seconds between settlement queries of a captured payment (`PAYPIPE_SETTLEMENT_POLL`).
    let settlementPoll: Double
    /// Apple's merchant-token events, pulled and applied in the round (nil: not configured; docs/merchant-tokens.md).
    public let merchantTokens: MerchantTokenUpkeep?
    /// The deferred series (``DeferredMetrics``): the round sets the waiting gauge, the worker's completions
    /// (``OperationsWorker/completion``) count what they committed on the same instance.
    let deferredMetrics = DeferredMetrics()

    public init(stage: OperationsStage, settlementPoll: Double = 6 * 3600, merchantTokens: MerchantTokenUpkeep? = nil) {
        self.stage = stage
        self.settlementPoll = settlementPoll
        self.merchantTokens = merchantTokens
    }

    /// The merchant-token puller's series (``MerchantTokenMetrics``), present whether or not the pull is configured.
    public func attach(metrics registry: MetricsRegistry) {
        (merchantTokens?.metrics ?? MerchantTokenMetrics()).attach(metrics: registry)
    }

    public func upkeep(database: PostgresConnection, logger: Logger) throws {
        let clock = try BatchClock.read(database)
        let suspensions = try suspensionCandidates(database: database)
        let captured = try settlementCandidates(database: database, clock: clock)
        let endpoints = try self.endpoints(Set(suspensions.map(\.merchantId) + captured.map(\.payment.merchantId)), database: database, logger: logger)
        let capabilities = { (merchant: String) in endpoints[merchant].map { stage.connectors.connector($0.connector).upkeep($0) } }
        let suspend = OperationUpkeep.suspensions(suspensions, capabilities: capabilities)
        let poll = OperationUpkeep.settlementQueries(captured, now: clock.database, poll: settlementPoll, capabilities: capabilities)
        let answers = stage.carryOut(suspend + poll, endpoints: endpoints, now: clock.worker)
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
        try database.transaction { try stage.apply(writes, on: $0) }
        deferredMetrics.awaiting(try PaymentStore().awaitingAmountCount(on: database))
        try merchantTokens?.run(database: database, logger: logger)
    }

    /// Each merchant's configured endpoint, the pass's merchants looked up once (at most two statements,
    /// ``MerchantDirectory/lookups(_:on:)``). Merchants without one are left out (nothing can be sent for them), and so
    /// are unknown ones and those whose configuration cannot be loaded: their payments alone wait for a later pass, and
    /// an unloadable one is logged each pass (`merchant_unavailable`), so the wait is not silent.
    func endpoints(_ merchants: Set<String>, database: PostgresConnection, logger: Logger) throws -> [String: GatewayEndpoint] {
        guard !merchants.isEmpty else { return [:] }
        return try stage.directory.lookups(merchants, on: database).reduce(into: [:]) { endpoints, lookup in
            switch lookup.value {
            case .found(let entry): endpoints[lookup.key] = OperationsStage.endpoint(entry.merchant)
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
            """).withFacts(stage.steps.store, database: database).map { $0.payment }
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
                stage.connectors.connector(ConnectorKind(gatewayType: type) ?? ConnectorRegistry.fallback).pollsSettlement
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
            """, [settlementPoll, clock.database, PostgresArray(types)]).withFacts(stage.steps.store, database: database).map { payment, row in
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
