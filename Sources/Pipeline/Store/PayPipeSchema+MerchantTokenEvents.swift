extension PayPipeSchema {
    /// Migration 16: Apple's merchant-token notifications, queued by `paypipe-apple-notifications` and pulled over
    /// mutual TLS afterwards (docs/merchant-tokens.md). One row per Apple event id: the notification endpoint answers
    /// 200 only once its row is committed, and Apple's retries of the same id (up to three, immediately) find the row
    /// already there. Written only by `MerchantTokenEventStore`.
    ///
    /// - `merchant_id`: the PayPipe merchant named in the notification path (NULL for the bare Apple path);
    /// - `state`: `queued` (to pull), `pulled` (Apple's answer stored and decided, not yet applied to a credential),
    ///   `applied` (applied, or nothing to apply), `failed` (given up: an answer that cannot be used, or Apple's 7-day
    ///   window passed; `last_error` says why);
    /// - `event_type`, `merchant_token_identifier`, `reason`, `metadata`: Apple's answer once pulled;
    /// - `applied_note`: what applying it did (credential unlinked, already unlinked, metadata updated, no credential).
    static let merchantTokenEvents = """
    CREATE TABLE merchant_token_events (
        event_id                   text PRIMARY KEY,
        merchant_id                text,
        state                      text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued','pulled','applied','failed')),
        received_at                timestamptz NOT NULL DEFAULT clock_timestamp(),
        notifications              integer NOT NULL DEFAULT 1,
        attempts                   integer NOT NULL DEFAULT 0,
        next_attempt_at            timestamptz NOT NULL DEFAULT clock_timestamp(),
        event_type                 text,
        merchant_token_identifier  text,
        reason                     text,
        metadata                   jsonb,
        last_error                 text,
        applied_note               text,
        settled_at                 timestamptz
    );
    CREATE INDEX merchant_token_events_due ON merchant_token_events (next_attempt_at) WHERE state = 'queued';
    """
}
