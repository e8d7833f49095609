extension PayPipeSchema {
    /// Migration 18: what the merchant is told about its stored credentials (`credential.unlinked`,
    /// `credential.updated`; docs/merchant-tokens.md "Telling the merchant"). An outbox: `CredentialStore` writes one
    /// row in the same transaction as the change it reports (so a change is never lost and never told twice); the
    /// notify worker hands each un-notified row to its stage (`handed_at`, again after `PAYPIPE_STUCK_AFTER` if the
    /// hand-off was lost) and settles it (`notified_at`) like an operation's event. Written only by
    /// `CredentialEventStore`.
    ///
    /// - `event_id`: the event's stable id (`webhook-id`, `message_id`), chosen once at insert;
    /// - `payment_id`: the payment that stored the credential (the event's `paymentId`/`jobId`, its `notify_url`);
    /// - `credential`: the credential's public fields as the change left them (never a secret: no token, no PAN);
    /// - `reason`: why it changed (Apple's UNLINK reason, the operator's unlink reason).
    static let credentialEvents = """
    CREATE TABLE credential_events (
        id             bigserial PRIMARY KEY,
        event_id       text NOT NULL UNIQUE,
        type           text NOT NULL CHECK (type IN ('credential.unlinked','credential.updated')),
        credential_id  text NOT NULL REFERENCES credentials(id),
        merchant_id    text NOT NULL,
        payment_id     uuid NOT NULL REFERENCES payments(id),
        credential     jsonb NOT NULL,
        reason         text,
        occurred_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
        handed_at      timestamptz,
        notified_at    timestamptz
    );
    CREATE INDEX credential_events_unnotified ON credential_events (id) WHERE notified_at IS NULL;
    CREATE INDEX credential_events_credential ON credential_events (credential_id, id);
    """
}
