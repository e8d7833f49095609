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
        guard stage != .decrypt else { return [] }
        return try connection.transaction { transaction in
            let rows = try transaction.query(
                """
                WITH stuck AS (
                    SELECT id FROM payments
                    WHERE stage = $1
                      AND updated_at < now() - make_interval(secs => $2)
                      AND (redriven_at IS NULL OR redriven_at < now() - make_interval(secs => $2))
                    ORDER BY updated_at
                    LIMIT $3
                    FOR UPDATE SKIP LOCKED)
                UPDATE payments p SET redriven_at = now(), redrive_count = p.redrive_count + 1
                FROM stuck WHERE p.id = stuck.id
                RETURNING p.id, p.merchant_id, p.job_id
                """,
                [stage.rawValue, stuckAfterSeconds, limit])
            return try rows.map { row in
                StageMessage(
                    paymentId: try row.decode("id", as: UUID.self),
                    merchantId: try row.decode("merchant_id", as: String.self),
                    jobId: try row.decode("job_id", as: String.self))
            }
        }
    }
}
