import Foundation
import Postgres

/// SQL for `webhook_deliveries` (one row per attempt) and the webhook switch of a merchant's configuration.
/// Stateless, like ``Pipeline/PaymentStore``; called outside any transaction by the notify stage (each write stands
/// on its own, and no transaction is held across the HTTP call).
public struct WebhookDeliveryStore: Sendable {
    public init() {}

    public func record(_ attempt: WebhookAttempt, event: PaymentEvent, on connection: PostgresConnection) throws {
        try connection.query(
            """
            INSERT INTO webhook_deliveries (payment_id, event_id, event_type, url, attempt, status_code, latency_ms, error, outcome)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            """,
            [event.paymentId, event.id, event.type.rawValue, attempt.url, Int32(clamping: attempt.number),
             attempt.statusCode.map { Int32(clamping: $0) }, attempt.latencyMs.map { Int32(clamping: $0) }, attempt.error,
             attempt.outcome.rawValue])
    }

    /// Attempts, newest first. `failedOnly` keeps attempts whose outcome is `failed` or `disabled`.
    public func list(paymentId: UUID? = nil, failedOnly: Bool = false, limit: Int = 100, on connection: PostgresConnection) throws -> [WebhookDeliveryRecord] {
        let rows = try connection.query(
            """
            SELECT \(WebhookDeliveryRecord.columns) FROM webhook_deliveries
            WHERE ($1::uuid IS NULL OR payment_id = $1::uuid)
              AND (NOT $2::boolean OR outcome IN ('failed', 'disabled'))
            ORDER BY id DESC LIMIT $3
            """,
            [paymentId, failedOnly, Int64(limit)])
        return try rows.map(WebhookDeliveryRecord.init(row:))
    }

    /// Sets `config.webhook.enabled = false` when the merchant's webhook still points at `url` (a 410 from an
    /// old URL must not disable a URL the operator has since configured). Returns whether it changed anything.
    @discardableResult
    public func disableMerchantWebhook(_ merchantId: String, url: String, on connection: PostgresConnection) throws -> Bool {
        let result = try connection.query(
            """
            UPDATE merchants SET config = jsonb_set(config, '{webhook,enabled}', 'false'::jsonb), updated_at = clock_timestamp()
            WHERE id = $1 AND config->'webhook'->>'url' = $2 AND (config->'webhook'->>'enabled')::boolean IS DISTINCT FROM false
            """, [merchantId, url])
        return result.affectedRows == 1
    }

    /// Keeps the reconciler away from a payment whose next webhook attempt is already scheduled on a retry tier:
    /// the reconciler re-drives `notify` payments whose `redriven_at` is older than its threshold, and a webhook
    /// retry may legitimately wait hours. Stamping the expected next attempt time prevents a second delivery chain.
    public func holdForRetry(_ paymentId: UUID, seconds: Double, on connection: PostgresConnection) throws {
        try connection.query(
            "UPDATE payments SET redriven_at = clock_timestamp() + make_interval(secs => $2) WHERE id = $1 AND stage = 'notify'",
            [paymentId, seconds])
    }
}
