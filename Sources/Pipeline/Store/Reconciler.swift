import Foundation
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

    /// What the reconciler's gauges show for this stage (``StageMetrics/stageBacklog(_:)``).
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
