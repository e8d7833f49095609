import Foundation
import Pipeline
import Postgres

/// The notify stage's part of ``Pipeline/PaymentStore``'s set-based statements, kept with the stage that runs them (the
/// delivered payments marked done, one or a batch, the retry hold, the holds for good and their release, the webhook
/// replay's requeue). `PaymentStore` stays the one writer of `payments` and `payment_events`.
extension PaymentStore {
    /// Marks a terminal payment as fully handled (notification done): it leaves every queue for good.
    /// With `deliveredStatus`, only while the payment still has the status that was delivered: an operator who resolved
    /// a `needs_review` payment while its webhook was in flight has queued the new status, which must still go out.
    public func markDone(_ paymentId: UUID, deliveredStatus: String? = nil, on connection: PostgresConnection) throws {
        try connection.query(
            "UPDATE payments SET stage = $3, updated_at = clock_timestamp() WHERE id = $1 AND stage = $4 AND ($2::text IS NULL OR status = $2)",
            [paymentId, deliveredStatus, PaymentStage.done.rawValue, PaymentStage.notify.rawValue])
    }

    /// Keeps the reconciler away from a `notify` payment until `seconds` from now (its next webhook attempt's time).
    public func holdForRetry(_ paymentId: UUID, seconds: Double, on connection: PostgresConnection) throws {
        try connection.query(
            "UPDATE payments SET redriven_at = clock_timestamp() + make_interval(secs => $2) WHERE id = $1 AND stage = $3",
            [paymentId, seconds, PaymentStage.notify.rawValue])
    }

    /// Holds `notify` payments for good (`redriven_at = 'infinity'`, which the reconciler never re-drives).
    public func holdIndefinitely(_ paymentIds: [UUID], on connection: PostgresConnection) throws {
        guard !paymentIds.isEmpty else { return }
        try connection.query(
            "UPDATE payments SET redriven_at = 'infinity' WHERE id = ANY($1::uuid[]) AND stage = $2",
            [PostgresArray(paymentIds), PaymentStage.notify.rawValue])
    }

    /// Releases the `notify` payments held for good whose latest attempt to one of the (merchant, url) endpoints was
    /// `held`, clearing `redriven_at`, and returns their hand-offs.
    public func releaseHeld(merchantIds: [String], urls: [String], on connection: PostgresConnection) throws -> [StageMessage] {
        guard !merchantIds.isEmpty else { return [] }
        let rows = try connection.query(
            """
            UPDATE payments p SET redriven_at = NULL
            WHERE p.stage = $3 AND p.redriven_at = 'infinity'
              AND EXISTS (SELECT 1 FROM webhook_deliveries d
                          JOIN unnest($1::text[], $2::text[]) AS k(merchant_id, url) ON d.url = k.url
                          WHERE d.payment_id = p.id AND d.outcome = 'held' AND p.merchant_id = k.merchant_id)
            RETURNING p.id, p.merchant_id, p.job_id, p.trace_parent, p.trace_state
            """, [PostgresArray(merchantIds), PostgresArray(urls), PaymentStage.notify.rawValue])
        return try rows.map(Self.tracedMessage(row:))
    }

    /// Puts terminal payments (one, or those with a `failed` or `disabled` webhook attempt at or after `since`) back
    /// at stage `notify` from `done` or `notify`, clearing `redriven_at`, and returns their hand-offs.
    public func requeueForNotification(paymentId: UUID?, failedSince since: Date?, on connection: PostgresConnection) throws -> [StageMessage] {
        let rows = try connection.query(
            """
            UPDATE payments SET stage = $3, updated_at = clock_timestamp(), redriven_at = NULL
            WHERE stage = ANY($4::text[]) AND status = ANY($5::text[])
              AND (($1::uuid IS NOT NULL AND id = $1::uuid)
                   OR ($1::uuid IS NULL AND id IN (SELECT payment_id FROM webhook_deliveries
                                                   WHERE outcome IN ('failed', 'disabled') AND attempted_at >= $2)))
            RETURNING id, merchant_id, job_id, trace_parent, trace_state
            """,
            [paymentId, since, PaymentStage.notify.rawValue, PostgresArray([PaymentStage.done.rawValue, PaymentStage.notify.rawValue]),
             PostgresArray(PaymentStatus.allCases.filter(\.isTerminal).map(\.rawValue))])
        return try rows.map(Self.tracedMessage(row:))
    }

    /// A payment whose webhook was answered: the event delivered and the attempt to record in `webhook_deliveries`.
    public struct NotifiedPayment: Sendable {
        public let paymentId: UUID
        /// The status the event delivered: the payment is done only while it still has it.
        public let deliveredStatus: String
        public let eventId, eventType, url: String
        public let attempt: Int32
        public let statusCode, latencyMs: Int32?
        public let error: String?
        public let outcome: String

        public init(paymentId: UUID, deliveredStatus: String, eventId: String, eventType: String, url: String, attempt: Int32,
                    statusCode: Int32?, latencyMs: Int32?, error: String?, outcome: String) {
            (self.paymentId, self.deliveredStatus, self.eventId, self.eventType, self.url) = (paymentId, deliveredStatus, eventId, eventType, url)
            (self.attempt, self.statusCode, self.latencyMs, self.error, self.outcome) = (attempt, statusCode, latencyMs, error, outcome)
        }
    }

    /// Marks the payments done that are still at stage `notify` with the delivered status (rows locked in id order)
    /// and records their attempts; returns the ids of the payments settled (the others had no row written). The
    /// payment ids must be distinct.
    public func markDone(_ rows: [NotifiedPayment], on connection: PostgresConnection) throws -> Set<UUID> {
        guard !rows.isEmpty else { return [] }
        let settled = try connection.query(
            """
                WITH input AS (
                    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int4[], $6::int4[], $7::int4[],
                                         $8::text[], $9::text[], $10::text[])
                        WITH ORDINALITY AS t(payment_id, event_id, event_type, url, attempt, status_code, latency_ms, error, outcome,
                                             delivered_status, n)),
                locked AS (
                    SELECT id, stage, status FROM payments WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE),
                done AS (
                    UPDATE payments p SET stage = $11, updated_at = clock_timestamp()
                    FROM locked JOIN input i ON i.payment_id = locked.id
                    WHERE p.id = locked.id AND locked.stage = $12 AND locked.status = i.delivered_status
                    RETURNING p.id),
                recorded AS (
                    INSERT INTO webhook_deliveries (payment_id, event_id, event_type, url, attempt, status_code, latency_ms, error, outcome)
                    SELECT i.payment_id, i.event_id, i.event_type, i.url, i.attempt, i.status_code, i.latency_ms, i.error, i.outcome
                    FROM input i JOIN done d ON d.id = i.payment_id
                    ORDER BY i.n
                    RETURNING payment_id)
                SELECT payment_id FROM recorded
            """,
            [PostgresArray(rows.map(\.paymentId)), PostgresArray(rows.map(\.eventId)), PostgresArray(rows.map(\.eventType)),
             PostgresArray(rows.map(\.url)), PostgresArray(rows.map(\.attempt)), PostgresArray(rows.map(\.statusCode)),
             PostgresArray(rows.map(\.latencyMs)), PostgresArray(rows.map(\.error)), PostgresArray(rows.map(\.outcome)),
             PostgresArray(rows.map(\.deliveredStatus)), PaymentStage.done.rawValue, PaymentStage.notify.rawValue])
        return Set(try settled.map { try $0.decode("payment_id", as: UUID.self) })
    }
}
