import Postgres

/// PayPipe's versioned SQL migrations, compiled into the binary so a copied executable (container image)
/// carries its schema; SwiftPM resource bundles would not travel with it. Applied by `paypipe migrate`
/// through ``Migrator`` under an advisory lock. Never edit an applied migration: add a new version.
public enum PayPipeSchema {
    public static let migrations: [Migration] = [
        Migration(version: 1, name: "pipeline core", sql: core),
        Migration(version: 2, name: "purge card data at terminal status", sql: terminalPurge),
        Migration(version: 3, name: "lean payments indexes", sql: leanIndexes),
        Migration(version: 4, name: "merchant key usage", sql: keyUsage),
        Migration(version: 5, name: "attempt send deadline, reconciliation time, site and late answers", sql: attemptGuards),
        Migration(version: 6, name: "webhook endpoint health", sql: webhookEndpoints),
        Migration(version: 7, name: "money lifecycle and operations", sql: operations),
        Migration(version: 8, name: "operations of other connectors", sql: connectorOperations),
        Migration(version: 9, name: "lifecycle trigger only where the lifecycle can change", sql: narrowLifecycleTrigger),
        Migration(version: 10, name: "lifecycle invariants in one function", sql: lifecycleInvariantsFunction),
        Migration(version: 11, name: "less WAL per payment: unread indexes dropped, room for same-page updates", sql: leanWAL),
        Migration(version: 12, name: "lifecycle edges generated from MoneyLifecycle", sql: lifecycleRules),
        Migration(version: 13, name: "stored credentials, token types and merchant-initiated payments", sql: credentials),
        Migration(version: 14, name: "deferred payments: awaiting_amount and the completion's time", sql: deferredAmount),
        Migration(version: 15, name: "payments keep their trace context", sql: traceContext),
        Migration(version: 16, name: "Apple merchant-token notifications", sql: merchantTokenEvents),
        Migration(version: 18, name: "credential events for merchants (outbox)", sql: credentialEvents),
        Migration(version: 25, name: "request names checked by shape, not by processor", sql: neutralRequestNames),
    ]

    /// Advisory-lock key for migrations (ASCII "paypipe" as an integer), shared by every PayPipe process.
    public static let migrationLockKey: Int64 = 0x70_61_79_70_69_70_65

    static let core = """
    CREATE TABLE merchants (
        id                         text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9._-]{1,64}$'),
        apple_merchant_identifier  text,
        -- Non-secret settings (gateway type, URLs, mode, request types, webhook URL).
        config                     jsonb NOT NULL DEFAULT '{}'::jsonb,
        -- Secrets (JWT secret, webhook secret, merchant private keys) as one AES-256-GCM blob
        -- under the data key; AAD = merchant id.
        secrets_ciphertext         bytea,
        secrets_nonce              bytea,
        secrets_key_id             text,
        created_at                 timestamptz NOT NULL DEFAULT now(),
        updated_at                 timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE payments (
        id                    uuid PRIMARY KEY,
        merchant_id           text NOT NULL REFERENCES merchants(id),
        -- (merchant_id, job_id) is the idempotency key; job_hash detects reuse with other content.
        job_id                text NOT NULL,
        job_hash              bytea NOT NULL,
        order_reference       text,
        -- Both nullable: a job can fail validation before they are known.
        amount_minor          bigint CHECK (amount_minor > 0),
        currency              char(3) CHECK (currency ~ '^[A-Z]{3}$'),
        status                text NOT NULL CHECK (status IN
                                ('received','decrypted','prepared','submitting',
                                 'authorized','declined','failed','needs_review')),
        stage                 text NOT NULL CHECK (stage IN ('decrypt','authorize','submit','notify','done')),
        error_code            text,
        error_message         text,
        -- Apple Pay header.transactionId; unique so a replayed token is rejected by the database itself.
        token_transaction_id  text UNIQUE,
        notify_url            text,
        metadata              jsonb NOT NULL DEFAULT '{}'::jsonb,
        first_received_at     timestamptz NOT NULL,
        redriven_at           timestamptz,
        redrive_count         integer NOT NULL DEFAULT 0,
        created_at            timestamptz NOT NULL DEFAULT now(),
        updated_at            timestamptz NOT NULL DEFAULT now(),
        UNIQUE (merchant_id, job_id)
    );
    CREATE INDEX payments_stage_updated ON payments (stage, updated_at) WHERE stage <> 'done';
    CREATE INDEX payments_status ON payments (status);

    -- Append-only audit trail of every transition. Never card data.
    CREATE TABLE payment_events (
        id           bigserial PRIMARY KEY,
        payment_id   uuid NOT NULL REFERENCES payments(id),
        at           timestamptz NOT NULL DEFAULT clock_timestamp(),
        from_status  text,
        to_status    text NOT NULL,
        stage        text NOT NULL,
        actor        text NOT NULL,
        error_code   text,
        detail       text
    );
    CREATE INDEX payment_events_payment ON payment_events (payment_id, id);
    CREATE FUNCTION payment_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'payment_events is append-only';
    END $$;
    CREATE TRIGGER payment_events_no_update BEFORE UPDATE OR DELETE ON payment_events
        FOR EACH ROW EXECUTE FUNCTION payment_events_append_only();

    -- Decrypted card data, AES-256-GCM under the data key (AAD = payment id); crypto-shredded
    -- (ciphertext and nonce nulled) once the payment is terminal.
    CREATE TABLE card_data (
        payment_id   uuid PRIMARY KEY REFERENCES payments(id),
        key_id       text NOT NULL,
        nonce        bytea,
        ciphertext   bytea,
        created_at   timestamptz NOT NULL DEFAULT now(),
        purged_at    timestamptz,
        CHECK ((purged_at IS NULL) = (ciphertext IS NOT NULL))
    );

    -- Gateway request (claims) built by the authorize stage; encrypted like card data.
    CREATE TABLE gateway_requests (
        payment_id        uuid PRIMARY KEY REFERENCES payments(id),
        order_reference   text NOT NULL,
        request_types     text[] NOT NULL,
        key_id            text NOT NULL,
        nonce             bytea,
        ciphertext        bytea,
        created_at        timestamptz NOT NULL DEFAULT now(),
        purged_at         timestamptz
    );

    -- One row per attempt to send a request to the gateway. `sending` is committed before the call.
    CREATE TABLE gateway_attempts (
        id                      bigserial PRIMARY KEY,
        payment_id              uuid NOT NULL REFERENCES payments(id),
        order_reference         text NOT NULL,
        request_type            text NOT NULL,
        state                   text NOT NULL CHECK (state IN ('sending','completed','uncertain','not_sent')),
        outcome                 text,
        error_code              text,
        error_message           text,
        transaction_reference   text,
        settle_status           text,
        acquirer_response_code  text,
        auth_code               text,
        masked_pan              text,
        started_at              timestamptz NOT NULL DEFAULT now(),
        finished_at             timestamptz
    );
    CREATE INDEX gateway_attempts_payment ON gateway_attempts (payment_id, id);
    CREATE INDEX gateway_attempts_sending ON gateway_attempts (started_at) WHERE state = 'sending';

    -- Every webhook delivery attempt, for audit and replay.
    CREATE TABLE webhook_deliveries (
        id             bigserial PRIMARY KEY,
        payment_id     uuid NOT NULL REFERENCES payments(id),
        event_id       text NOT NULL,
        event_type     text NOT NULL,
        url            text NOT NULL,
        attempt        integer NOT NULL,
        status_code    integer,
        latency_ms     integer,
        error          text,
        outcome        text NOT NULL CHECK (outcome IN ('delivered','retrying','failed','disabled')),
        attempted_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX webhook_deliveries_payment ON webhook_deliveries (payment_id, id);
    CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
    """
}
