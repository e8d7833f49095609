extension PayPipeSchema {
    /// Migration 6: the health of each merchant webhook endpoint, shared by every notify worker and kept across
    /// restarts (Svix-style automatic disabling). One row per (merchant, URL) that has failed at least once; written
    /// only by `WebhookEndpointStore`.
    ///
    /// - `failing_since`: the first failed attempt after the last success (NULL: healthy);
    /// - `disabled_at` / `disabled_reason`: set when the endpoint failed continuously for longer than
    ///   `PAYPIPE_WEBHOOK_DISABLE_AFTER`; cleared by `paypipe webhooks endpoints enable`.
    ///
    /// `webhook_deliveries.outcome` gains `held`: a delivery kept back (not sent, not dropped) because its endpoint
    /// was disabled; the payment stays in stage `notify` until the endpoint is re-enabled.
    static let webhookEndpoints = """
    CREATE TABLE webhook_endpoints (
        merchant_id      text NOT NULL,
        url              text NOT NULL,
        failing_since    timestamptz,
        last_failure_at  timestamptz,
        last_success_at  timestamptz,
        last_error       text,
        disabled_at      timestamptz,
        disabled_reason  text,
        updated_at       timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (merchant_id, url)
    );
    CREATE INDEX webhook_endpoints_disabled ON webhook_endpoints (merchant_id) WHERE disabled_at IS NOT NULL;
    ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_outcome_check,
        ADD CONSTRAINT webhook_deliveries_outcome_check CHECK (outcome IN ('delivered','retrying','failed','disabled','held'));
    CREATE INDEX webhook_deliveries_held ON webhook_deliveries (url) WHERE outcome = 'held';
    """
}
