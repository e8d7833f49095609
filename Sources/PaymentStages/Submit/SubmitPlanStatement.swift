import Foundation
import PaymentDomain
import Pipeline
import Postgres

/// The submit stage's batch read and the set-based statement of its planning transaction.
///
/// The read is the one both transactions start with (prepare and record): every payment of the batch locked in id
/// order (two workers cannot deadlock on the same payments), with its stored request, its latest AUTH attempt and
/// the status queries since, and the database's time read once for the batch. ``SubmitDecision`` decides on it.
/// The `sending` attempt and `prepared → submitting` are written in the planning transaction, which commits before
/// any AUTH leaves.
enum SubmitPlanStatement {
    /// A payment as submit reads it: its status and deadline for the decisions, its merchant for the endpoint, its
    /// amount and capture mode for the request and the status query, its hand-off.
    struct Payment: Sendable {
        let id: UUID
        let merchantId: String
        let jobId: String
        let status: PaymentStatus
        let firstReceivedAt: Date
        let amountMinor: Int64?
        let currency: String?
        /// How its AUTH is captured (migration 7; `automatic` before it).
        let captureMode: CaptureMode

        /// The hand-off message that addresses this payment.
        var message: StageMessage { StageMessage(paymentId: id, merchantId: merchantId, jobId: jobId) }

        /// The columns ``init(row:)`` reads, of the `payments` alias `p` (the joined request has an `order_reference`).
        static let columns = "p.id, p.merchant_id, p.job_id, p.status, p.first_received_at, p.amount_minor, p.currency, p.capture_mode"

        init(row: PostgresRow) throws {
            id = try row.decode("id", as: UUID.self)
            merchantId = try row.decode("merchant_id", as: String.self)
            jobId = try row.decode("job_id", as: String.self)
            status = try row.decodeChoice("status")
            firstReceivedAt = try row.decode("first_received_at", as: Date.self)
            amountMinor = try row.decode("amount_minor", as: Int64?.self)
            currency = try row.decode("currency", as: String?.self)
            captureMode = CaptureMode(rawValue: try row.decode("capture_mode", as: String.self)) ?? .automatic
        }
    }

    /// A payment of the batch, locked, as the decisions see it plus what carrying them out needs.
    struct Row {
        let payment: Payment
        /// Its stored request when it is `prepared` (`nil`: none stored, already purged, or unreadable).
        let request: GatewayRequest?
        let locked: SubmitDecision.Locked
        /// The latest AUTH attempt's order reference and site (what a status query asks about, and where).
        let orderReference: String?
        let siteReference: String?
    }

    /// The batch read: the rows by payment id (ids without a payment are absent) and the database's time.
    struct Read {
        let now: Date
        let rows: [UUID: Row]

        var locked: [UUID: SubmitDecision.Locked] { rows.mapValues(\.locked) }
    }

    /// One AUTH about to be sent: its `sending` attempt.
    typealias Send = PaymentStore.SubmitSend

    /// Locks the batch's payments, then reads them. `legacySettleSeconds` stands in for the reconciliation
    /// time of an attempt written before migration 5 (`started_at` + it).
    static func lockAndRead(_ ids: [UUID], legacySettleSeconds: Double, requests: GatewayRequestStore, on connection: PostgresConnection) throws -> Read {
        // Two statements, never one: a statement that waits for a row lock returns the locked row as its holder left
        // it, but reads every other table (attempts, status queries, requests) as of its own start, before the
        // holder committed. Read after the locks are held, the attempts are the ones the payment's status belongs to.
        try connection.query(lockOnlyStatement, [PostgresArray(ids)])
        return try read(ids, legacySettleSeconds: legacySettleSeconds, requests: requests, on: connection)
    }

    /// The batch read of payments whose row locks this transaction already holds (e.g. claimed by the reconciler).
    static func read(_ ids: [UUID], legacySettleSeconds: Double, requests: GatewayRequestStore, on connection: PostgresConnection) throws -> Read {
        var rows: [UUID: Row] = [:]
        var now: Date?
        for row in try connection.query(readStatement, [PostgresArray(ids), legacySettleSeconds, GatewayAttemptStore.queryRequestType]) {
            now = try row.decode("db_now", as: Date.self)
            let payment = try Payment(row: row)
            let request = payment.status == .prepared ? (try? requests.open(row, for: payment.id)) ?? nil : nil
            var latest: SubmitProtocol.Attempt?
            if let id = try row.decode("attempt_id", as: Int64?.self) {
                let stateText = try row.decode("attempt_state", as: String.self)
                guard let state = GatewayAttempt.State(rawValue: stateText) else {
                    throw PostgresError.decoding(column: "attempt_state", expected: "GatewayAttempt.State", reason: "unknown state '\(stateText)'")
                }
                latest = SubmitProtocol.Attempt(id: id, state: state, reconcileAfter: try row.decode("settle_at", as: Date.self))
            }
            rows[payment.id] = Row(
                payment: payment, request: request,
                locked: SubmitDecision.Locked(
                    status: payment.status, firstReceivedAt: payment.firstReceivedAt, latest: latest,
                    inconclusiveQueries: Int(try row.decode("inconclusive", as: Int64.self)),
                    notFoundQueries: Int(try row.decode("not_found", as: Int64.self)),
                    lastNotFound: try row.decode("last_not_found", as: Date?.self),
                    // A `prepared` payment needs its request; past it, nothing more is sent from it.
                    requestStored: payment.status != .prepared || request != nil),
                orderReference: try row.decode("attempt_reference", as: String?.self),
                siteReference: try row.decode("attempt_site", as: String?.self))
        }
        // No row (every payment unknown): no decision reads the time.
        return Read(now: now ?? .distantPast, rows: rows)
    }

    /// One payment, locked and read (a permanent failure recorded alone); `nil` when it does not exist.
    static func lockPayment(_ id: UUID, on connection: PostgresConnection) throws -> Payment? {
        try connection.query("SELECT \(Payment.columns) FROM payments p WHERE p.id = $1 FOR UPDATE", [id]).first.map(Payment.init(row:))
    }

    /// Moves every payment of `sends` from `prepared` to `submitting` with its `sending` attempt and audit event
    /// (``PaymentStore/beginSubmitting(_:sendWindow:actor:on:)``); returns the attempt id of each payment it moved.
    static func begin(_ sends: [Send], sendWindow: Double, on connection: PostgresConnection) throws -> [UUID: Int64] {
        guard !sends.isEmpty else { return [:] }
        return try PaymentStore().beginSubmitting(sends, sendWindow: sendWindow, actor: SubmitStage.actor, on: connection)
    }

    /// The batch's row locks, in id order (two workers cannot deadlock on the same payments).
    private static let lockOnlyStatement = "SELECT id FROM payments WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE"

    /// The batch read, under the locks taken before it. `db_now` is an uncorrelated subquery: evaluated once per
    /// execution, the batch's one reading of the clock.
    private static let readStatement = """
        SELECT \(Payment.columns), \(GatewayRequestStore.columns("g")), (SELECT clock_timestamp()) AS db_now,
               a.id AS attempt_id, a.state AS attempt_state, a.order_reference AS attempt_reference, a.site_reference AS attempt_site,
               coalesce(a.reconcile_after, a.started_at + make_interval(secs => $2::float8)) AS settle_at,
               coalesce(q.inconclusive, 0) AS inconclusive, coalesce(q.not_found, 0) AS not_found, q.last_not_found
        FROM payments p
        LEFT JOIN gateway_requests g ON g.payment_id = p.id AND g.purged_at IS NULL AND g.ciphertext IS NOT NULL
        LEFT JOIN LATERAL (SELECT id, state, order_reference, site_reference, reconcile_after, started_at FROM gateway_attempts
                           WHERE payment_id = p.id AND request_type <> $3 ORDER BY id DESC LIMIT 1) a ON true
        LEFT JOIN LATERAL (SELECT count(*) FILTER (WHERE outcome = 'inconclusive' AND error_code IS DISTINCT FROM 'merchant_busy')::bigint AS inconclusive,
                                  count(*) FILTER (WHERE outcome = 'not_found')::bigint AS not_found,
                                  max(started_at) FILTER (WHERE outcome = 'not_found') AS last_not_found
                           FROM gateway_attempts WHERE payment_id = p.id AND request_type = $3 AND id > a.id) q ON true
        WHERE p.id = ANY($1::uuid[])
        """
}
