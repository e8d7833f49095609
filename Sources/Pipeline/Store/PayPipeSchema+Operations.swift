extension PayPipeSchema {
    /// Migration 7: the money lifecycle of an authorised payment and the operations that change it
    /// (docs/operations-lifecycle.md).
    ///
    /// `payments` gains the lifecycle (written only through `PaymentStore`):
    /// - `capture_mode` / `capture_within_seconds`: how the payment's AUTH is captured (the job's `captureMode` over the
    ///   merchant's; `automatic` for every payment before this migration);
    /// - `lifecycle`, `authorized_minor`, `captured_minor`, `refunded_minor`, `capture_deadline`: `MoneyLifecycle`,
    ///   present exactly while the payment is `authorized`. The trigger below starts it when the payment becomes
    ///   `authorized`, by whichever path (submit, reconciliation, an operator's resolve), as
    ///   `MoneyLifecycle.afterAuthorization` does: automatic = captured in full, manual = authorised, nothing captured;
    /// - `settle_status`: the AUTH's settle status as last learnt (an operation's answer, a status query); NULL until
    ///   then, when the AUTH attempt's own answer stands;
    /// - `settle_checked_at`: when settlement was last queried (the settlement poll).
    ///
    /// The invariants are checked by the database itself, whatever statement writes: captured ≤ authorised, refunded ≤
    /// captured (the settled amount), nothing refunded before settlement, nothing captured or refunded on a void (the
    /// CHECK); and every lifecycle change follows an edge of the state diagram, never leaves `voided` or `refunded`,
    /// never lowers the refunded amount nor raises the captured one after the capture (the trigger), so a refund of a
    /// voided payment, or two refunds adding up to more than the settled amount, fail in SQL even if code asked.
    ///
    /// `payment_operations`: one row per operation, written only by `OperationStore`; `(merchant_id, operation_id)` is
    /// the idempotency key (`content_hash` detects reuse with other content), and at most one operation per payment is
    /// open (`requested` or `needs_review`) at a time, by a unique partial index. It holds what was decided under the
    /// payment's lock: the gateway request, the lifecycle before it and the one its confirmation leads to.
    ///
    /// `operation_attempts`: every gateway request an operation made (the TRANSACTIONUPDATE or REFUND, and the
    /// TRANSACTIONQUERY reconciling a lost answer), in the states of `gateway_attempts`; `sending` is committed before
    /// the call.
    ///
    /// `payment_events` gains `lifecycle_from` / `lifecycle_to` and `operation_id`: a lifecycle change is audited like
    /// a status change.
    static let operations = """
    ALTER TABLE payments
        ADD COLUMN capture_mode text NOT NULL DEFAULT 'automatic' CHECK (capture_mode IN ('automatic', 'manual')),
        ADD COLUMN capture_within_seconds double precision CHECK (capture_within_seconds > 0),
        ADD COLUMN lifecycle text CHECK (lifecycle IN ('authorized', 'captured', 'settled', 'partially_refunded', 'refunded', 'voided')),
        ADD COLUMN authorized_minor bigint,
        ADD COLUMN captured_minor bigint,
        ADD COLUMN refunded_minor bigint,
        ADD COLUMN capture_deadline timestamptz,
        ADD COLUMN settle_status text,
        ADD COLUMN settle_checked_at timestamptz;

    ALTER TABLE payments ADD CONSTRAINT payments_lifecycle_invariants CHECK (
        (lifecycle IS NULL AND authorized_minor IS NULL AND captured_minor IS NULL AND refunded_minor IS NULL)
        OR (status = 'authorized' AND lifecycle IS NOT NULL
            AND authorized_minor > 0
            AND captured_minor BETWEEN 0 AND authorized_minor
            AND refunded_minor BETWEEN 0 AND captured_minor
            AND CASE lifecycle
                WHEN 'authorized' THEN captured_minor = 0 AND refunded_minor = 0
                WHEN 'captured' THEN captured_minor > 0 AND refunded_minor = 0
                WHEN 'settled' THEN captured_minor > 0 AND refunded_minor = 0
                WHEN 'partially_refunded' THEN refunded_minor > 0 AND refunded_minor < captured_minor
                WHEN 'refunded' THEN refunded_minor > 0 AND refunded_minor = captured_minor
                WHEN 'voided' THEN captured_minor = 0 AND refunded_minor = 0
            END));

    CREATE FUNCTION payments_lifecycle() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.status = 'authorized' AND OLD.status IS DISTINCT FROM 'authorized' AND NEW.lifecycle IS NULL
           AND NEW.amount_minor IS NOT NULL THEN
            -- MoneyLifecycle.afterAuthorization.
            NEW.authorized_minor := NEW.amount_minor;
            NEW.refunded_minor := 0;
            IF NEW.capture_mode = 'manual' THEN
                NEW.lifecycle := 'authorized';
                NEW.captured_minor := 0;
                NEW.capture_deadline := clock_timestamp() + make_interval(secs => NEW.capture_within_seconds);
            ELSE
                NEW.lifecycle := 'captured';
                NEW.captured_minor := NEW.amount_minor;
            END IF;
            RETURN NEW;
        END IF;
        IF OLD.lifecycle IS NULL OR (OLD.lifecycle IS NOT DISTINCT FROM NEW.lifecycle
           AND OLD.captured_minor IS NOT DISTINCT FROM NEW.captured_minor
           AND OLD.refunded_minor IS NOT DISTINCT FROM NEW.refunded_minor
           AND OLD.authorized_minor IS NOT DISTINCT FROM NEW.authorized_minor) THEN
            RETURN NEW;
        END IF;
        -- LifecycleStatus.successors.
        IF NOT (NEW.lifecycle = ANY (CASE OLD.lifecycle
                WHEN 'authorized' THEN ARRAY['captured', 'voided']
                WHEN 'captured' THEN ARRAY['captured', 'settled', 'voided']
                WHEN 'settled' THEN ARRAY['partially_refunded', 'refunded']
                WHEN 'partially_refunded' THEN ARRAY['partially_refunded', 'refunded']
                ELSE ARRAY[]::text[] END)) THEN
            RAISE EXCEPTION 'illegal lifecycle change % -> %', OLD.lifecycle, NEW.lifecycle USING ERRCODE = 'check_violation';
        END IF;
        IF NEW.authorized_minor IS DISTINCT FROM OLD.authorized_minor OR NEW.refunded_minor < OLD.refunded_minor
           OR (OLD.lifecycle <> 'authorized' AND NEW.captured_minor > OLD.captured_minor)
           OR (OLD.lifecycle IN ('settled', 'partially_refunded') AND NEW.captured_minor <> OLD.captured_minor) THEN
            RAISE EXCEPTION 'illegal lifecycle amounts: captured % -> %, refunded % -> %',
                OLD.captured_minor, NEW.captured_minor, OLD.refunded_minor, NEW.refunded_minor USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
    END $$;
    CREATE TRIGGER payments_lifecycle BEFORE UPDATE ON payments
        FOR EACH ROW
        WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.lifecycle IS DISTINCT FROM NEW.lifecycle
              OR OLD.captured_minor IS DISTINCT FROM NEW.captured_minor OR OLD.refunded_minor IS DISTINCT FROM NEW.refunded_minor
              OR OLD.authorized_minor IS DISTINCT FROM NEW.authorized_minor)
        EXECUTE FUNCTION payments_lifecycle();

    -- CapturePolicy in SQL, for the statements that create payments: the job's captureMode / captureWithin over the
    -- merchant's gateway.captureMode / captureWithin (both validated before: the job when decoded, the document when
    -- applied; ISO 8601 durations are PostgreSQL intervals); a job that switches the mode drops the merchant's
    -- captureWithin, and only a manual capture has one.
    CREATE FUNCTION paypipe_capture_policy(merchant text, job_mode text, job_within text,
                                           OUT capture_mode text, OUT capture_within_seconds double precision)
    LANGUAGE sql STABLE AS $$
        SELECT coalesce(job_mode, g.mode, 'automatic'),
               CASE WHEN coalesce(job_mode, g.mode) = 'manual'
                    THEN extract(epoch FROM coalesce(job_within, CASE WHEN job_mode IS NULL OR job_mode = g.mode THEN g.within END)::interval)::float8
               END
        FROM (SELECT (SELECT config->'gateway'->>'captureMode' FROM merchants WHERE id = merchant) AS mode,
                     (SELECT config->'gateway'->>'captureWithin' FROM merchants WHERE id = merchant) AS within) g
    $$;

    -- The captureWithin expiry's lookup (the operations stage's reconciler round).
    CREATE INDEX payments_capture_deadline ON payments (capture_deadline) WHERE lifecycle = 'authorized';

    -- Payments authorised before this migration were captured automatically by their AUTH.
    UPDATE payments SET lifecycle = 'captured', authorized_minor = amount_minor, captured_minor = amount_minor, refunded_minor = 0
        WHERE status = 'authorized' AND amount_minor IS NOT NULL;

    ALTER TABLE payment_events
        ADD COLUMN lifecycle_from text,
        ADD COLUMN lifecycle_to text,
        ADD COLUMN operation_id text;

    CREATE TABLE payment_operations (
        id                  bigserial PRIMARY KEY,
        merchant_id         text NOT NULL,
        operation_id        text NOT NULL CHECK (operation_id ~ '^[A-Za-z0-9._:-]{1,128}$'),
        -- NULL only for an operation that failed before its payment was known (invalid, unknown payment).
        payment_id          uuid REFERENCES payments(id),
        kind                text NOT NULL CHECK (kind IN ('capture', 'void', 'refund')),
        -- Who asked: the merchant's job, the captureWithin expiry, the void of a late AUTH.
        requested_by        text NOT NULL DEFAULT 'merchant' CHECK (requested_by IN ('merchant', 'expiry', 'late_authorization')),
        content_hash        bytea NOT NULL,
        amount_minor        bigint CHECK (amount_minor > 0),
        state               text NOT NULL CHECK (state IN ('requested', 'succeeded', 'failed', 'needs_review')),
        -- The gateway request decided under the payment's lock.
        request_type        text CHECK (request_type IN ('TRANSACTIONUPDATE', 'REFUND')),
        transaction_reference text,
        update_settle_status  text,
        update_settle_base_amount bigint,
        refund_amount       bigint,
        -- The lifecycle before the request, and the one its confirmation leads to, with the event reporting it.
        before_lifecycle    text,
        before_captured     bigint,
        before_refunded     bigint,
        after_lifecycle     text,
        after_captured      bigint,
        after_refunded      bigint,
        event_type          text CHECK (event_type IN ('payment.captured', 'payment.voided', 'payment.refunded')),
        event_amount        bigint,
        -- The gateway's reference of what it did: a REFUND's own transaction reference.
        gateway_reference   text,
        error_code          text,
        error_message       text,
        created_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
        finished_at         timestamptz,
        notified_at         timestamptz,
        UNIQUE (merchant_id, operation_id),
        CHECK ((state = 'requested') = (finished_at IS NULL) OR state = 'needs_review'),
        CHECK (state <> 'succeeded' OR (request_type IS NOT NULL AND after_lifecycle IS NOT NULL)),
        CHECK (payment_id IS NOT NULL OR state = 'failed')
    );
    CREATE UNIQUE INDEX payment_operations_one_open ON payment_operations (payment_id) WHERE state IN ('requested', 'needs_review');
    CREATE INDEX payment_operations_payment ON payment_operations (payment_id, id);
    CREATE INDEX payment_operations_unnotified ON payment_operations (finished_at) WHERE notified_at IS NULL AND state IN ('succeeded', 'failed');

    CREATE TABLE operation_attempts (
        id                  bigserial PRIMARY KEY,
        operation_id        bigint NOT NULL REFERENCES payment_operations(id),
        request_type        text NOT NULL CHECK (request_type IN ('TRANSACTIONUPDATE', 'REFUND', 'TRANSACTIONQUERY')),
        state               text NOT NULL CHECK (state IN ('sending', 'completed', 'uncertain', 'not_sent')),
        outcome             text,
        error_code          text,
        error_message       text,
        transaction_reference text,
        settle_status       text,
        settle_base_amount  bigint,
        started_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
        send_deadline       timestamptz,
        reconcile_after     timestamptz,
        finished_at         timestamptz
    );
    CREATE INDEX operation_attempts_operation ON operation_attempts (operation_id, id);
    CREATE INDEX operation_attempts_sending ON operation_attempts (reconcile_after) WHERE state IN ('sending', 'uncertain');
    """
}

extension PayPipeSchema {
    /// Migration 8: the operations of processors whose operations are their own
    /// (`OperationProtocol.Transport.Operations.processorOperations`, docs/connectors.md). Their requests are the
    /// processor's own capture (`CAPTURE`, with `capture_amount`) and reversal (`REVERSAL`) of its payment, and a
    /// `REFUND`; a lost answer is reconciled by the connector's status query, recorded as a `QUERY` attempt.
    ///
    /// `gateway_attempts.settle_due_date`: an AUTH's settlement due date as its processor answered it, after which its
    /// settlement is first queried (`SettlementSchedule`).
    static let connectorOperations = """
    ALTER TABLE gateway_attempts ADD COLUMN settle_due_date date;
    ALTER TABLE payment_operations ADD COLUMN capture_amount bigint CHECK (capture_amount > 0);
    ALTER TABLE payment_operations DROP CONSTRAINT payment_operations_request_type_check;
    ALTER TABLE payment_operations ADD CONSTRAINT payment_operations_request_type_check
        CHECK (request_type IN ('TRANSACTIONUPDATE', 'REFUND', 'CAPTURE', 'REVERSAL'));
    ALTER TABLE payment_operations ADD CONSTRAINT payment_operations_capture_amount_check2
        CHECK ((request_type = 'CAPTURE') = (capture_amount IS NOT NULL) OR request_type IS NULL);
    ALTER TABLE operation_attempts DROP CONSTRAINT operation_attempts_request_type_check;
    ALTER TABLE operation_attempts ADD CONSTRAINT operation_attempts_request_type_check
        CHECK (request_type IN ('TRANSACTIONUPDATE', 'REFUND', 'TRANSACTIONQUERY', 'CAPTURE', 'REVERSAL', 'QUERY'));
    """
}

extension PayPipeSchema {
    /// Migration 9: `payments_lifecycle` fires only where it can do something, not on every status change.
    ///
    /// The function acts in two cases: a payment becoming `authorized` (it starts the lifecycle), and a change of the
    /// lifecycle or its amounts (it checks the edge). On any other status change it returns the row unchanged, yet the
    /// trigger of migration 7 called it for each of them: three PL/pgSQL calls per payment on the hot path (`prepared`,
    /// `submitting`, `authorized`) where one is needed. The condition below is exactly the function's two cases, so
    /// what the database accepts and refuses is the same; a status change away from `authorized` while a lifecycle is
    /// present is still refused, by the CHECK `payments_lifecycle_invariants`, which never depended on the trigger.
    static let narrowLifecycleTrigger = """
    DROP TRIGGER payments_lifecycle ON payments;
    CREATE TRIGGER payments_lifecycle BEFORE UPDATE ON payments
        FOR EACH ROW
        WHEN ((NEW.status = 'authorized' AND OLD.status IS DISTINCT FROM 'authorized')
              OR OLD.lifecycle IS DISTINCT FROM NEW.lifecycle
              OR OLD.captured_minor IS DISTINCT FROM NEW.captured_minor OR OLD.refunded_minor IS DISTINCT FROM NEW.refunded_minor
              OR OLD.authorized_minor IS DISTINCT FROM NEW.authorized_minor)
        EXECUTE FUNCTION payments_lifecycle();
    """
}

extension PayPipeSchema {
    /// Migration 10: the CHECK `payments_lifecycle_invariants` calls one function holding its expression, unchanged.
    ///
    /// PostgreSQL reads every CHECK of a table back from its stored expression tree (`pg_constraint.conbin`) and
    /// prepares it again in each statement that writes the table. Migration 7's tree is 11 KB of text (a CASE of six
    /// branches), two thirds of all the CHECK text of `payments`, and reading it was most of what the lifecycle costs
    /// the hot path: with this migration, PostgreSQL's backends execute 0.13 M fewer instructions per payment, about 5%
    /// of their work (callgrind; bench/results/performance-history.md, "Migration 10"). As a function call the stored
    /// tree is a few nodes; PL/pgSQL prepares the body once per session and evaluates it per row.
    ///
    /// What the database accepts and refuses is the same: the body is migration 7's expression, taken from its text,
    /// and the function is not STRICT, so a NULL result still passes the CHECK as before. It is IMMUTABLE: it reads
    /// only its arguments, which are the columns the expression names.
    static let lifecycleInvariantsFunction = """
    CREATE FUNCTION paypipe_lifecycle_invariants(status text, lifecycle text, authorized_minor bigint,
                                                 captured_minor bigint, refunded_minor bigint)
    RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
    BEGIN
        RETURN (\(lifecycleInvariantsExpression));
    END $$;
    ALTER TABLE payments DROP CONSTRAINT payments_lifecycle_invariants,
        ADD CONSTRAINT payments_lifecycle_invariants
            CHECK (paypipe_lifecycle_invariants(status, lifecycle, authorized_minor, captured_minor, refunded_minor));
    """

    /// The expression of migration 7's CHECK `payments_lifecycle_invariants`, as that migration's text states it (what
    /// stands between the parentheses of `CHECK (…)`). Migration 10's function returns it, so the two cannot differ;
    /// migration 7's text never changes once applied, so neither does migration 10's checksum.
    static let lifecycleInvariantsExpression: String = {
        let sql = operations
        guard let opening = sql.range(of: "ADD CONSTRAINT payments_lifecycle_invariants CHECK (") else {
            preconditionFailure("migration 7 states the CHECK payments_lifecycle_invariants")
        }
        var depth = 1
        var end = opening.upperBound
        while depth > 0 {
            precondition(end < sql.endIndex, "migration 7's CHECK payments_lifecycle_invariants is closed")
            if sql[end] == "(" { depth += 1 } else if sql[end] == ")" { depth -= 1 }
            end = sql.index(after: end)
        }
        return String(sql[opening.upperBound..<sql.index(before: end)])
    }()
}
