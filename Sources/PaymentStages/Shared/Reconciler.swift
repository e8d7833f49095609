import Foundation
import Pipeline
import Postgres

/// Finds payments that sat in a non-terminal stage longer than a threshold — a lost hand-off, a purged
/// queue, an operator mistake — and claims them for re-driving, so nothing waits forever.
///
/// Re-driving is safe because every stage is idempotent on the payment's current status: a duplicate
/// hand-off finds the work done and only re-publishes the next hand-off. Claims use
/// `FOR UPDATE SKIP LOCKED` and stamp `redriven_at`, so several workers of a stage never re-drive the
/// same payment in the same round.
public struct Reconciler: Sendable {
    public let stage: Stage
    public let stuckAfterSeconds: Double
    public let limit: Int

    public init(stage: Stage, stuckAfterSeconds: Double, limit: Int = 500) {
        self.stage = stage
        self.stuckAfterSeconds = stuckAfterSeconds
        self.limit = limit
    }

    /// Claims stuck payments of this stage (one transaction) and returns their hand-offs to publish.
    /// The decrypt stage is excluded: its input is the job itself, which is not stored; a job lost
    /// before its payment row exists is the publisher's to re-send (idempotent by job id).
    public func claimStuck(on connection: PostgresConnection) throws -> [StageMessage] {
        guard stage != .decrypt, stage.carriesPayments else { return [] }
        return try connection.transaction { transaction in
            try PaymentStore().claimStuck(in: PaymentStage(stage), idleFor: stuckAfterSeconds, limit: limit, on: transaction)
        }
    }

    /// What the reconciler's gauges show for this stage (``Pipeline/PaymentMetrics/stageBacklog(oldestAgeSeconds:stuck:needsReview:)``).
    public struct Backlog: Sendable, Equatable {
        /// Seconds since the payment idle longest in this stage last moved (entered the stage or advanced within
        /// it); 0 when the stage holds none. Transient retries do not touch a payment, so a payment circling
        /// through the retry tiers keeps ageing.
        public var oldestAgeSeconds: Double
        /// Payments idle in this stage past the re-drive threshold: what the next rounds will re-drive.
        public var stuck: Int
        /// Payments waiting for a person (`needs_review`), whichever stage they are in.
        public var needsReview: Int

        public init(oldestAgeSeconds: Double, stuck: Int, needsReview: Int) {
            self.oldestAgeSeconds = oldestAgeSeconds
            self.stuck = stuck
            self.needsReview = needsReview
        }
    }

    /// Payments parked on purpose (`redriven_at = 'infinity'`: a webhook held for a disabled endpoint, see the notify
    /// stage) are neither idle nor re-drivable and are left out; their own gauge and alert cover them.
    /// Reads ``Backlog`` with three index lookups (`payments_stage_updated`, `payments_needs_review`); the explicit
    /// `stage <> 'done'` lets the planner use the partial index with a parameter.
    public func backlog(on connection: PostgresConnection) throws -> Backlog {
        let rows = try connection.query(
            """
            SELECT coalesce((SELECT extract(epoch FROM now() - min(updated_at))::float8 FROM payments
                             WHERE stage = $1 AND stage <> 'done' AND redriven_at IS DISTINCT FROM 'infinity'), 0) AS age,
                   (SELECT count(*) FROM payments WHERE stage = $1 AND stage <> 'done'
                       AND redriven_at IS DISTINCT FROM 'infinity'
                       AND updated_at < now() - make_interval(secs => $2)) AS stuck,
                   (SELECT count(*) FROM payments WHERE status = 'needs_review') AS review
            """,
            [stage.rawValue, stuckAfterSeconds])
        guard let row = rows.first else { return Backlog(oldestAgeSeconds: 0, stuck: 0, needsReview: 0) }
        return Backlog(
            oldestAgeSeconds: max(0, try row.decode("age", as: Double.self)),
            stuck: Int(try row.decode("stuck", as: Int64.self)), needsReview: Int(try row.decode("review", as: Int64.self)))
    }
}

/// Payments that ended `failed`, by the stage they failed in and code, read from the audit trail (`payment_events`,
/// an index range past the last id read) after they committed — so `paypipe_payments_failed_total` counts exactly
/// the recorded failures, whichever path (bulk, one by one, savepoint retry) recorded them. Starts at the current
/// end of the trail: a worker counts the failures from its start on. Every instance of a stage reads the same
/// failures: aggregate across instances with `max`, not `sum`.
public struct FailureTally: Sendable {
    private var lastEventId: Int64?

    public init() {}

    /// The failures of `stage` committed since the previous call, as (code, count); none on the first call, which
    /// only finds the end of the trail.
    public mutating func newFailures(of stage: Stage, on connection: PostgresConnection) throws -> [(code: String, count: Int)] {
        let end = try connection.query("SELECT coalesce(max(id), 0) AS id FROM payment_events").first?.decode("id", as: Int64.self) ?? 0
        guard let after = lastEventId else {
            lastEventId = end
            return []
        }
        let rows = try connection.query(
            """
            SELECT from_status, coalesce(error_code, 'unknown') AS code FROM payment_events
            WHERE id > $1 AND id <= $2 AND to_status = $3
            """, [after, end, PaymentStatus.failed.rawValue])
        lastEventId = end
        var counts: [String: Int] = [:]
        for row in rows {
            let from = try row.decode("from_status", as: String?.self).flatMap(PaymentStatus.init(rawValue:))
            guard (from?.stage ?? .decrypt) == stage else { continue }
            counts[try row.decode("code", as: String.self), default: 0] += 1
        }
        return counts.sorted { $0.key < $1.key }.map { (code: $0.key, count: $0.value) }
    }
}

/// The payments' reconciler as a component of a stage's worker (``WorkerRuntime/StageRuntime``'s `components`), on one
/// thread of its own with its own database connection, every `PAYPIPE_RECONCILE_INTERVAL` (none when 0): re-drives
/// payments stuck in the stage (``Reconciler``; not the decrypt stage), runs the stage's own round
/// (``ReconcilingStage/reconcile(on:)``), sets the backlog gauges, counts the failures the audit trail recorded
/// (``FailureTally``), and runs the handler's upkeep. Stopped after the lanes, before the consumer and the publisher.
public enum ReconcilerComponent {
    /// The components argument of ``WorkerRuntime/StageRuntime`` for `handler`.
    public static func components<Handler: ReconcilingStage>(for handler: Handler) -> @Sendable (WorkerContext) -> [any WorkerComponent] {
        { context in
            let configuration = context.configuration
            // Registered here, before the worker serves /metrics, even when this process runs no reconciler.
            let metrics = PaymentMetrics(context.metrics)
            return [ThreadsComponent(
                name: "paypipe-\(handler.stage.rawValue)-reconciler", count: configuration.reconcileIntervalSeconds > 0 ? 1 : 0,
                body: { _ in run(handler, context: context, metrics: metrics) }, onStop: {})]
        }
    }

    private static func run<Handler: ReconcilingStage>(_ handler: Handler, context: WorkerContext, metrics: PaymentMetrics) {
        let configuration = context.configuration, logger = context.logger
        let reconciler = Reconciler(stage: handler.stage, stuckAfterSeconds: configuration.stuckAfterSeconds)
        var database: PostgresConnection?
        var nextRun = Date().addingTimeInterval(configuration.reconcileIntervalSeconds)
        // The gauges and the upkeep once right at start (a freshly started worker reports its backlog and the
        // certificates at once); re-driving waits for the first interval.
        var observed = false
        var failures = FailureTally()
        while !context.isStopRequested {
            if !observed {
                observed = true
                if let connection = context.connected(&database) { observe(handler, reconciler, &failures, context: context, metrics: metrics, on: connection) }
            }
            guard Date() >= nextRun else {
                Thread.sleep(forTimeInterval: min(0.25, configuration.reconcileIntervalSeconds))
                continue
            }
            nextRun = Date().addingTimeInterval(configuration.reconcileIntervalSeconds)
            guard let connection = context.connected(&database) else { continue }
            observe(handler, reconciler, &failures, context: context, metrics: metrics, on: connection)
            do {
                let ended = try handler.reconcile(on: connection)
                if !ended.isEmpty, context.publish(ended) {
                    logger.warning("payments_ended_by_reconciler", [("count", .int(ended.count))])
                }
                let stuck = try reconciler.claimStuck(on: connection)
                guard !stuck.isEmpty else { continue }
                if context.publish(stuck.map { (handler.stage, $0) }) {
                    metrics.redriven(stuck.count)
                    logger.warning("payments_redriven", [("count", .int(stuck.count))])
                }
            } catch {
                logger.error("reconcile_failed", [("error", .string(String(describing: error)))])
            }
        }
        database?.close()
    }

    /// One round of the backlog gauges (``Reconciler/backlog(on:)``), the failure counts and the handler's upkeep;
    /// errors are logged.
    private static func observe<Handler: ReconcilingStage>(
        _ handler: Handler, _ reconciler: Reconciler, _ failures: inout FailureTally, context: WorkerContext, metrics: PaymentMetrics,
        on connection: PostgresConnection
    ) {
        let logger = context.logger
        do {
            let backlog = try reconciler.backlog(on: connection)
            metrics.stageBacklog(oldestAgeSeconds: backlog.oldestAgeSeconds, stuck: backlog.stuck, needsReview: backlog.needsReview)
            // On an idle worker this round is the only database operation: without it, `/healthz` and
            // `paypipe_database_up` would stay down after an outage until the next delivery.
            context.databaseReachable()
            for (code, count) in try failures.newFailures(of: handler.stage, on: connection) { metrics.paymentFailed(code: code, count: count) }
        } catch {
            logger.error("backlog_read_failed", [("error", .string(String(describing: error)))])
        }
        do {
            try handler.upkeep(database: connection, logger: logger)
        } catch {
            logger.error("upkeep_failed", [("error", .string(String(describing: error)))])
        }
    }
}
