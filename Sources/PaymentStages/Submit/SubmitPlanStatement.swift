import Foundation
import Pipeline
import Postgres

/// The set-based SQL of the submit stage's planning transaction: two statements for the whole batch instead of
/// four or five per message (lock, merchant, request, attempt, transition).
///
/// The rules of the per-message path hold: the `sending` attempt and `prepared → submitting` are written in the
/// planning transaction, which commits before any AUTH leaves; rows are locked in id order, so two workers cannot
/// deadlock on the same payments.
enum SubmitPlanStatement {
    /// A payment of the batch, locked, with its stored request when it is `prepared` (`nil`: none stored, already
    /// purged, or unreadable — the per-message path reports why).
    struct Candidate {
        let payment: PaymentRecord
        let request: GatewayRequest?
        /// The database clock when the batch was locked.
        let now: Date
        /// An attempt of the payment still `sending` or `uncertain` (the protocol never sends beside one).
        let openAttempt: Int64?
    }

    /// One AUTH about to be sent: its `sending` attempt, with the columns ``GatewayAttemptStore/begin`` writes.
    struct Send {
        let paymentId: UUID
        let orderReference: String
        let requestType: String
        let siteReference: String
        /// Seconds from the send deadline to reconciliation: the transport's total timeout plus the margin.
        let settleSeconds: Double
    }

    /// Locks the batch's payments (`ORDER BY id FOR UPDATE OF payments`) and reads them with their stored requests
    /// in one statement.
    static func lock(_ ids: [UUID], requests: GatewayRequestStore, on connection: PostgresConnection) throws -> [UUID: Candidate] {
        var candidates: [UUID: Candidate] = [:]
        for row in try connection.query(lockStatement, [PostgresArray(ids)]) {
            let payment = try PaymentRecord(row: row)
            let request = payment.status == .prepared ? (try? requests.open(row, for: payment.id)) ?? nil : nil
            candidates[payment.id] = Candidate(
                payment: payment, request: request, now: try row.decode("db_now", as: Date.self),
                openAttempt: try row.decode("open_attempt", as: Int64?.self))
        }
        return candidates
    }

    /// Moves every payment of `sends` from `prepared` to `submitting` (guarded by status), records their `sending`
    /// attempts and audit events, in one statement; returns the attempt id of each payment it moved.
    static func begin(_ sends: [Send], sendWindow: Double, on connection: PostgresConnection) throws -> [UUID: Int64] {
        try PaymentStateMachine.validate(from: .prepared, to: .submitting)
        let rows = try connection.query(beginStatement, [
            PostgresArray(sends.map(\.paymentId)), PostgresArray(sends.map(\.orderReference)), PostgresArray(sends.map(\.requestType)),
            PaymentStatus.prepared.rawValue, PaymentStatus.submitting.rawValue, PaymentStatus.submitting.stage.rawValue, SubmitStage.actor,
            PostgresArray(sends.map(\.siteReference)), sendWindow, PostgresArray(sends.map(\.settleSeconds)),
        ])
        var attempts: [UUID: Int64] = [:]
        for row in rows {
            attempts[try row.decode("payment_id", as: UUID.self)] = try row.decode("id", as: Int64.self)
        }
        return attempts
    }

    /// `PaymentRecord.columns` qualified with the `payments` alias `p` (the joined request has an `order_reference` too).
    private static let paymentColumns = PaymentRecord.columns.split(separator: ",")
        .map { "p." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", ")

    private static let lockStatement = """
        SELECT \(paymentColumns), \(GatewayRequestStore.columns("g")), clock_timestamp() AS db_now,
               (SELECT max(a.id) FROM gateway_attempts a WHERE a.payment_id = p.id AND a.state IN ('sending', 'uncertain')) AS open_attempt
        FROM payments p
        LEFT JOIN gateway_requests g ON g.payment_id = p.id AND g.purged_at IS NULL AND g.ciphertext IS NOT NULL
        WHERE p.id = ANY($1::uuid[])
        ORDER BY p.id
        FOR UPDATE OF p
        """

    /// The attempts are inserted only for payments the guarded update moved, in batch order (ids ascending as the
    /// per-message path would assign them), with `clock_timestamp()` as `started_at` and the same send deadline and
    /// reconciliation time as ``GatewayAttemptStore/begin``.
    private static let beginStatement = """
        WITH input AS (
            SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $8::text[], $10::float8[]) WITH ORDINALITY AS t(payment_id, order_reference, request_type, site_reference, settle_seconds, n)),
        moved AS (
            UPDATE payments p SET status = $5, stage = $6, updated_at = clock_timestamp()
            FROM input i
            WHERE p.id = i.payment_id AND p.status = $4
            RETURNING p.id, i.n, i.order_reference, i.request_type, i.site_reference, i.settle_seconds),
        attempts AS (
            INSERT INTO gateway_attempts (payment_id, order_reference, request_type, state, started_at, send_deadline, reconcile_after, site_reference)
            SELECT id, order_reference, request_type, 'sending', t, t + make_interval(secs => $9::float8), t + make_interval(secs => $9::float8 + settle_seconds), site_reference
            FROM (SELECT *, clock_timestamp() AS t FROM moved) m ORDER BY n
            RETURNING id, payment_id),
        events AS (
            INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor)
            SELECT id, $4, $5, $6, $7 FROM moved ORDER BY n)
        SELECT id, payment_id FROM attempts
        """
}
