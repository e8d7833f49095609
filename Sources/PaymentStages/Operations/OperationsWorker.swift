import Foundation
import Pipeline
import Postgres

/// `paypipe-operations`' handler (``OperationsWorker/publisherScreened``): the operations stage for the batches, and
/// beside it what runs off a payment's path: the upkeep round (``OperationsUpkeepRound``: suspensions, the settlement
/// poll, merchant-token events) and the reconciler's hand-offs (``reconcile(on:)``). Batches, decoding and spans are the
/// stage's, unchanged.
public struct OperationsWorker: ReconcilingStage {
    public let operations: OperationsStage
    /// The upkeep round the launch wires (nil: no upkeep).
    public let upkeepRound: OperationsUpkeepRound?

    public init(_ operations: OperationsStage, upkeepRound: OperationsUpkeepRound? = nil) {
        self.operations = operations
        self.upkeepRound = upkeepRound
    }

    public var stage: Stage { operations.stage }

    public func decode(_ message: InboundMessage) throws(StageFailure) -> OperationsStage.Message {
        try operations.decode(message)
    }

    public func process(_ batch: [OperationsStage.Message], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        operations.process(batch, database: database)
    }

    public func spanAttributes(of message: OperationsStage.Message) -> [SpanAttribute] { operations.spanAttributes(of: message) }

    /// The worker's own series: deferred payments' (``DeferredMetrics``), then the upkeep round's (the merchant-token
    /// puller's).
    public func attach(metrics registry: MetricsRegistry) {
        operations.deferredMetrics.attach(metrics: registry)
        upkeepRound?.attach(metrics: registry)
    }

    /// The upkeep round, on the reconciler thread every `PAYPIPE_RECONCILE_INTERVAL`.
    public func upkeep(database: PostgresConnection, logger: Logger) throws {
        try upkeepRound?.upkeep(database: database, logger: logger)
    }

    /// Payments whose late AUTH is to be voided, or whose manual authorisation was not captured within
    /// `captureWithin`, each handed to the stage once per reconciler round (their void is idempotent: one operation
    /// per payment); and the deferred payments whose credential expired (``OperationsStage/expireDeferred(clock:on:)``),
    /// to notify. Runs on the reconciler thread every `PAYPIPE_RECONCILE_INTERVAL`.
    public func reconcile(on connection: PostgresConnection) throws -> [(stage: Stage, message: StageMessage)] {
        let rows = try connection.query(
            """
            (SELECT p.id, p.merchant_id, p.job_id, p.trace_parent, p.trace_state FROM payments p
             WHERE p.status = 'needs_review' AND p.error_code = 'late_authorization'
               AND NOT EXISTS (SELECT 1 FROM payment_operations o WHERE o.merchant_id = p.merchant_id AND o.operation_id = 'late-authorization-' || p.id::text)
             ORDER BY p.updated_at LIMIT 100)
            UNION ALL
            (SELECT p.id, p.merchant_id, p.job_id, p.trace_parent, p.trace_state FROM payments p
             WHERE p.lifecycle = 'authorized' AND p.capture_deadline <= clock_timestamp()
               AND NOT EXISTS (SELECT 1 FROM payment_operations o WHERE o.merchant_id = p.merchant_id AND o.operation_id = 'expiry-' || p.id::text)
             ORDER BY p.capture_deadline LIMIT 100)
            """)
        let handed: [(stage: Stage, message: StageMessage)] = try rows.map { row in
            (stage: .operations, message: try PaymentStore.tracedMessage(row: row))
        }
        // Deferred payments whose credential expired end `failed` here, and go to notify.
        return try handed + operations.expireDeferred(clock: BatchClock.read(connection), on: connection).map { (stage: .notify, message: $0) }
    }
}
