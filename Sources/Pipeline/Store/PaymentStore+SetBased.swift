import Foundation
import JSON
import Postgres

/// A status change a statement is about to write, already checked against ``PaymentStateMachine``: the only way the
/// store's statements obtain the status and stage values they bind, so no statement can write a transition the state
/// machine forbids, nor a status or stage spelled as an SQL literal.
public struct CheckedTransition: Sendable, Equatable {
    /// `nil` when the payment is created (its first audit event, `NULL → received`).
    public let from: PaymentStatus?
    public let to: PaymentStatus

    /// The stage the new status queues the payment for.
    public var stage: PaymentStage { PaymentStage(to.stage) }

    public init(from: PaymentStatus, to: PaymentStatus) throws(PaymentStateMachine.IllegalTransition) {
        try PaymentStateMachine.validate(from: from, to: to)
        self.from = from
        self.to = to
    }

    private init(creating status: PaymentStatus) {
        self.from = nil
        self.to = status
    }

    /// A new payment's row and first event.
    public static let creation = CheckedTransition(creating: PaymentStateMachine.initialStatus)

    /// Checks one transition per row of a set-based statement, in row order; the first illegal one throws before
    /// anything is written.
    public static func checkEach(_ pairs: [(from: PaymentStatus, to: PaymentStatus)]) throws(PaymentStateMachine.IllegalTransition) -> [CheckedTransition] {
        var checked: [CheckedTransition] = []
        checked.reserveCapacity(pairs.count)
        for pair in pairs { checked.append(try CheckedTransition(from: pair.from, to: pair.to)) }
        return checked
    }
}

/// The set-based statements of ``PaymentStore``: each carries a whole batch as array parameters and writes the payments
/// and their audit events in one statement. Every transition is a ``CheckedTransition``.
extension PaymentStore {
    /// The decrypt stage's batch read: the payments under the jobs' keys, and which of the tokens' `transactionId`s a
    /// payment already holds, in one statement of two index lookups (`UNION ALL`: an `OR` of the two would scan the
    /// table); no row locks: every write decrypt makes on what it read is guarded.
    public func decryptRows(keys: [Decrypt.JobKey], transactionIds: [String], on connection: PostgresConnection) throws
        -> (payments: [Decrypt.JobKey: Decrypt.Existing], claimed: Set<String>) {
        guard !keys.isEmpty else { return ([:], []) }
        let rows = try connection.query(
            """
            SELECT p.id, p.merchant_id, p.job_id, p.job_hash, p.status, p.first_received_at, NULL::text AS claimed
            FROM unnest($1::text[], $2::text[]) AS k(merchant_id, job_id)
            JOIN payments p ON p.merchant_id = k.merchant_id AND p.job_id = k.job_id
            UNION ALL
            SELECT NULL, NULL, NULL, NULL, NULL, NULL, token_transaction_id FROM payments WHERE token_transaction_id = ANY($3::text[])
            """,
            [PostgresArray(keys.map(\.merchantId)), PostgresArray(keys.map(\.jobId)), PostgresArray(transactionIds)])
        var payments: [Decrypt.JobKey: Decrypt.Existing] = [:]
        var claimed: Set<String> = []
        for row in rows {
            if let transactionId = try row.decode("claimed", as: String?.self) {
                claimed.insert(transactionId)
                continue
            }
            let key = Decrypt.JobKey(merchantId: try row.decode("merchant_id", as: String.self), jobId: try row.decode("job_id", as: String.self))
            let statusText = try row.decode("status", as: String.self)
            guard let status = PaymentStatus(rawValue: statusText) else {
                throw PostgresError.decoding(column: "status", expected: "PaymentStatus", reason: "unknown status '\(statusText)'")
            }
            payments[key] = Decrypt.Existing(
                id: try row.decode("id", as: UUID.self), key: key, jobHash: try row.decode("job_hash", as: [UInt8].self), status: status,
                firstReceivedAt: try row.decode("first_received_at", as: Date.self))
        }
        return (payments, claimed)
    }

    /// Inserts new payments already settled (`decrypted` with their card data and claimed `transactionId`, or `failed`
    /// with their code) with both audit events, and returns the ids of the payments actually created, in one statement.
    ///
    /// The events are `NULL → received` (stage `decrypt`, actor `decrypt`) then `received → decrypted` (actor `decrypt`)
    /// or `received → failed` (actor `pipeline`, with the code and reason, as every recorded failure). Both come from a
    /// single `INSERT … ORDER BY` — data-modifying CTEs run in no defined order relative to each other, a sorted
    /// `INSERT … SELECT` assigns its serial ids in order — so every payment's events keep their order, and payments
    /// follow input order. The payments are inserted sorted by (merchant, job id), so two workers inserting overlapping
    /// jobs wait for each other in one order rather than deadlock. `ON CONFLICT DO NOTHING` without an arbiter skips a
    /// row that hits *any* unique key (a concurrent worker inserted the job, or claimed the token, after the read): the
    /// caller finds it missing from the result. `receivedAt` becomes `first_received_at`. Each payment's capture policy is the
    /// job's `captureMode`/`captureWithin` over its merchant's (`paypipe_capture_policy`, ``PayPipeSchema`` migration 7),
    /// evaluated once per distinct (merchant, job mode, job window) of the batch rather than per row (the function is not
    /// inlined: each call is a separate function execution with its own two merchant lookups, about 14 µs per row). The
    /// CTE is `MATERIALIZED` because, referenced once, PostgreSQL would otherwise fold it into the join and could run
    /// the function again for every input row (pg_stat_statements counted one call per payment).
    public func insertNew(_ rows: [Decrypt.NewPayment<DataVault.SealedBox>], receivedAt: Date, on transaction: PostgresConnection) throws -> Set<UUID> {
        guard !rows.isEmpty else { return [] }
        let created = CheckedTransition.creation
        let settled = try CheckedTransition.checkEach(rows.map { (created.to, $0.settled.status) })
        let cards = rows.map { row -> DataVault.SealedBox? in
            if case .decrypted(let verified) = row.settled { verified.payload } else { nil }
        }
        let rejections = rows.map { row -> Rejection? in
            if case .failed(let rejection) = row.settled { rejection } else { nil }
        }
        let inserted = try transaction.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::int8[], $7::text[],
                                     $8::text[], $9::text[], $10::text[], $11::text[], $12::bytea[], $13::bytea[],
                                     $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $23::text[], $24::text[],
                                     $25::text[], $26::text[], $27::text[])
                    WITH ORDINALITY AS t(id, merchant_id, job_id, job_hash, order_reference, amount_minor, currency,
                                         notify_url, metadata, token_transaction_id, key_id, nonce, ciphertext,
                                         status, stage, error_code, error_message, actor, job_capture_mode, job_capture_within,
                                         token_type, merchant_token_identifier, merchant_token_metadata, n)),
            policy AS MATERIALIZED (
                SELECT k.merchant_id, k.job_capture_mode, k.job_capture_within, c.capture_mode, c.capture_within_seconds
                FROM (SELECT DISTINCT merchant_id, job_capture_mode, job_capture_within FROM input) k,
                     paypipe_capture_policy(k.merchant_id, k.job_capture_mode, k.job_capture_within) c),
            inserted AS (
                INSERT INTO payments (id, merchant_id, job_id, job_hash, order_reference, amount_minor, currency,
                                      status, stage, token_transaction_id, notify_url, metadata, error_code, error_message,
                                      first_received_at, updated_at, capture_mode, capture_within_seconds,
                                      token_type, merchant_token_identifier, merchant_token_metadata)
                SELECT input.id, input.merchant_id, job_id, job_hash, order_reference, amount_minor, currency,
                       status, stage, token_transaction_id, notify_url, metadata::jsonb, error_code, error_message,
                       $19, clock_timestamp(), policy.capture_mode, policy.capture_within_seconds,
                       token_type, merchant_token_identifier, merchant_token_metadata::jsonb
                FROM input JOIN policy ON policy.merchant_id IS NOT DISTINCT FROM input.merchant_id
                                      AND policy.job_capture_mode IS NOT DISTINCT FROM input.job_capture_mode
                                      AND policy.job_capture_within IS NOT DISTINCT FROM input.job_capture_within
                ORDER BY input.merchant_id, input.job_id
                ON CONFLICT DO NOTHING
                RETURNING id),
            card AS (
                INSERT INTO card_data (payment_id, key_id, nonce, ciphertext)
                SELECT input.id, input.key_id, input.nonce, input.ciphertext FROM input JOIN inserted USING (id)
                WHERE input.key_id IS NOT NULL),
            events AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor, error_code, detail)
                SELECT input.id, step.from_status, step.to_status, step.stage, step.actor, step.error_code, step.detail
                FROM input JOIN inserted USING (id)
                CROSS JOIN LATERAL (VALUES (1, NULL, $20::text, $21::text, $22::text, NULL::text, NULL::text),
                                           (2, $20::text, input.status, input.stage, input.actor, input.error_code, input.error_message))
                    AS step(n, from_status, to_status, stage, actor, error_code, detail)
                ORDER BY input.n, step.n)
            SELECT id FROM inserted
            """,
            [
                PostgresArray(rows.map(\.id)), PostgresArray(rows.map(\.key.merchantId)), PostgresArray(rows.map(\.key.jobId)),
                PostgresArray(rows.map(\.jobHash)), PostgresArray(rows.map(\.job?.orderReference)),
                PostgresArray(rows.map(\.job?.amount.value)), PostgresArray(rows.map(\.job?.amount.currency.code)),
                PostgresArray(rows.map(\.job?.notifyURL)), PostgresArray(rows.map { Self.metadataJSON($0.job?.metadata ?? [:]) }),
                PostgresArray(rows.map { row -> String? in
                    if case .decrypted(let verified) = row.settled { verified.transactionId } else { nil }
                }),
                PostgresArray(cards.map(\.?.keyId)), PostgresArray(cards.map(\.?.nonce)), PostgresArray(cards.map(\.?.ciphertext)),
                PostgresArray(settled.map(\.to.rawValue)), PostgresArray(settled.map(\.stage.rawValue)),
                PostgresArray(rejections.map(\.?.code)), PostgresArray(rejections.map(\.?.reason)),
                PostgresArray(rejections.map { $0 == nil ? Self.decryptActor : Self.failureActor }),
                receivedAt, created.to.rawValue, created.stage.rawValue, Self.decryptActor,
                PostgresArray(rows.map { $0.job?.captureMode?.rawValue }), PostgresArray(rows.map(\.job?.captureWithin)),
                PostgresArray(rows.map { $0.settled.token?.type.rawValue }),
                PostgresArray(rows.map { $0.settled.token?.merchantTokenIdentifier }),
                PostgresArray(rows.map { $0.settled.token?.merchantTokenMetadata }),
            ])
        return Set(try inserted.map { try $0.decode("id", as: UUID.self) })
    }

    static let decryptActor = "decrypt"
    /// The actor of every recorded failure's event.
    static let failureActor = "pipeline"

    /// The job's metadata as a JSON object for the `jsonb` column (which normalises key order); written with the JSON
    /// module rather than `JSONEncoder`, which cost more than the rest of building the row.
    static func metadataJSON(_ metadata: [String: String]) -> String {
        JSONValue.object(metadata.map { (key: $0.key, value: .string($0.value)) }).serializedString
    }

    /// A payment found still `received` that decrypt settles `decrypted`: claims its `transactionId`, stores its card
    /// data and writes the event, for the payments still `received` (guarded); returns their ids.
    public func decryptReceived(_ rows: [(id: UUID, verified: Decrypt.Verified<DataVault.SealedBox>)], on transaction: PostgresConnection) throws -> Set<UUID> {
        guard !rows.isEmpty else { return [] }
        let decrypted = try CheckedTransition(from: .received, to: .decrypted)
        let updated = try transaction.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bytea[], $5::bytea[], $10::text[], $11::text[], $12::text[])
                    WITH ORDINALITY AS t(id, token_transaction_id, key_id, nonce, ciphertext,
                                         token_type, merchant_token_identifier, merchant_token_metadata, n)),
            updated AS (
                UPDATE payments p SET status = $7, stage = $8, token_transaction_id = input.token_transaction_id,
                       token_type = input.token_type, merchant_token_identifier = input.merchant_token_identifier,
                       merchant_token_metadata = input.merchant_token_metadata::jsonb, updated_at = clock_timestamp()
                FROM input WHERE p.id = input.id AND p.status = $6
                RETURNING p.id),
            card AS (
                INSERT INTO card_data (payment_id, key_id, nonce, ciphertext)
                SELECT input.id, input.key_id, input.nonce, input.ciphertext FROM input JOIN updated USING (id)
                ON CONFLICT (payment_id) DO UPDATE SET key_id = EXCLUDED.key_id, nonce = EXCLUDED.nonce,
                    ciphertext = EXCLUDED.ciphertext, purged_at = NULL),
            event AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor)
                SELECT input.id, $6, $7, $8, $9 FROM input JOIN updated USING (id) ORDER BY input.n)
            SELECT id FROM updated
            """,
            [
                PostgresArray(rows.map(\.id)), PostgresArray(rows.map(\.verified.transactionId)),
                PostgresArray(rows.map(\.verified.payload.keyId)), PostgresArray(rows.map(\.verified.payload.nonce)),
                PostgresArray(rows.map(\.verified.payload.ciphertext)),
                decrypted.from?.rawValue, decrypted.to.rawValue, decrypted.stage.rawValue, Self.decryptActor,
                PostgresArray(rows.map(\.verified.token.type.rawValue)), PostgresArray(rows.map(\.verified.token.merchantTokenIdentifier)),
                PostgresArray(rows.map(\.verified.token.merchantTokenMetadata)),
            ])
        return Set(try updated.map { try $0.decode("id", as: UUID.self) })
    }

    /// A payment a stage decided to fail: its checked transition and the rejection.
    public struct Failing: Sendable {
        public let paymentId: UUID
        public let transition: CheckedTransition
        public let rejection: Rejection

        public init(paymentId: UUID, from: PaymentStatus, rejection: Rejection) throws(PaymentStateMachine.IllegalTransition) {
            self.paymentId = paymentId
            // A `submitting` payment may have an AUTH at the gateway: it never simply fails, a person must look.
            self.transition = try CheckedTransition(from: from, to: from == .submitting ? .needsReview : .failed)
            self.rejection = rejection
        }
    }

    /// Ends the payments still in their transitions' `from` status with the rejections' codes and reasons (the event's
    /// actor is `pipeline`, as for every recorded failure), in one statement; returns the ids of those it changed. The
    /// `payments_terminal_purge` trigger shreds their card data and requests.
    public func fail(_ rows: [Failing], on transaction: PostgresConnection) throws -> Set<UUID> {
        guard !rows.isEmpty else { return [] }
        let updated = try transaction.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
                    WITH ORDINALITY AS t(id, from_status, to_status, to_stage, error_code, detail, n)),
            updated AS (
                UPDATE payments p SET status = input.to_status, stage = input.to_stage, updated_at = clock_timestamp(),
                       error_code = input.error_code, error_message = input.detail
                FROM input WHERE p.id = input.id AND p.status = input.from_status
                RETURNING p.id),
            event AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor, error_code, detail)
                SELECT input.id, input.from_status, input.to_status, input.to_stage, $7, input.error_code, input.detail
                FROM input JOIN updated USING (id) ORDER BY input.n)
            SELECT id FROM updated
            """,
            [
                PostgresArray(rows.map(\.paymentId)), PostgresArray(rows.map { $0.transition.from?.rawValue }),
                PostgresArray(rows.map(\.transition.to.rawValue)), PostgresArray(rows.map(\.transition.stage.rawValue)),
                PostgresArray(rows.map(\.rejection.code)), PostgresArray(rows.map(\.rejection.reason)), Self.failureActor,
            ])
        return Set(try updated.map { try $0.decode("id", as: UUID.self) })
    }

    /// A built gateway request to store for a payment that advances `decrypted → prepared`, sealed for it (AAD =
    /// payment id).
    public struct PreparedRequest: Sendable {
        public let paymentId: UUID
        public let orderReference: String
        /// Validated tokens (`AUTH`, `THREEDQUERY`), so a comma list per row is a safe array transport.
        public let requestTypes: [String]
        public let sealed: DataVault.SealedBox

        public init(paymentId: UUID, orderReference: String, requestTypes: [String], sealed: DataVault.SealedBox) {
            (self.paymentId, self.orderReference, self.requestTypes, self.sealed) = (paymentId, orderReference, requestTypes, sealed)
        }
    }

    /// Advances the payments still `decrypted` to `prepared`, stores their requests and writes one audit event each —
    /// the row ``transition(_:from:to:actor:errorCode:detail:on:)`` writes — for the payments actually updated, whose
    /// ids it returns. The request insert keeps `ON CONFLICT (payment_id) DO NOTHING`: a stored request is never
    /// replaced.
    public func prepare(_ rows: [PreparedRequest], actor: String, on transaction: PostgresConnection) throws -> Set<UUID> {
        guard !rows.isEmpty else { return [] }
        let prepared = try CheckedTransition(from: .decrypted, to: .prepared)
        let updated = try transaction.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::bytea[])
                    WITH ORDINALITY AS t(id, order_reference, request_types, key_id, nonce, ciphertext, n)),
            updated AS (
                UPDATE payments p SET status = $8::text, stage = $9::text, updated_at = clock_timestamp()
                FROM input WHERE p.id = input.id AND p.status = $7::text
                RETURNING p.id),
            request AS (
                INSERT INTO gateway_requests (payment_id, order_reference, request_types, key_id, nonce, ciphertext)
                SELECT input.id, input.order_reference, string_to_array(input.request_types, ','), input.key_id, input.nonce,
                       input.ciphertext
                FROM input JOIN updated USING (id)
                ON CONFLICT (payment_id) DO NOTHING),
            event AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor)
                SELECT input.id, $7::text, $8::text, $9::text, $10::text
                FROM input JOIN updated USING (id)
                ORDER BY input.n)
            SELECT id FROM updated
            """,
            [
                PostgresArray(rows.map(\.paymentId)), PostgresArray(rows.map(\.orderReference)),
                PostgresArray(rows.map { $0.requestTypes.joined(separator: ",") }), PostgresArray(rows.map(\.sealed.keyId)),
                PostgresArray(rows.map(\.sealed.nonce)), PostgresArray(rows.map(\.sealed.ciphertext)),
                prepared.from?.rawValue, prepared.to.rawValue, prepared.stage.rawValue, actor,
            ])
        return Set(try updated.map { try $0.decode("id", as: UUID.self) })
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
            RETURNING p.id, p.merchant_id, p.job_id
            """, [PostgresArray(merchantIds), PostgresArray(urls), PaymentStage.notify.rawValue])
        return try rows.map(Self.message(row:))
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
            RETURNING id, merchant_id, job_id
            """,
            [paymentId, since, PaymentStage.notify.rawValue, PostgresArray([PaymentStage.done.rawValue, PaymentStage.notify.rawValue]),
             PostgresArray(PaymentStatus.allCases.filter(\.isTerminal).map(\.rawValue))])
        return try rows.map(Self.message(row:))
    }

    /// Claims up to `limit` payments idle at `stage` (and not re-driven) for `seconds`, oldest first, skipping rows
    /// another worker holds, stamps `redriven_at` and counts the re-drive; returns their hand-offs.
    public func claimStuck(in stage: PaymentStage, idleFor seconds: Double, limit: Int, on transaction: PostgresConnection) throws -> [StageMessage] {
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
            [stage.rawValue, seconds, limit])
        return try rows.map(Self.message(row:))
    }

    /// One AUTH about to be sent: its `sending` attempt, with the columns `GatewayAttemptStore.begin` writes.
    public struct SubmitSend: Sendable {
        public let paymentId: UUID
        public let orderReference: String
        public let requestType: String
        public let siteReference: String
        /// Seconds from the send deadline to reconciliation: the transport's total timeout plus the margin.
        public let settleSeconds: Double

        public init(paymentId: UUID, orderReference: String, requestType: String, siteReference: String, settleSeconds: Double) {
            (self.paymentId, self.orderReference, self.requestType, self.siteReference, self.settleSeconds) =
                (paymentId, orderReference, requestType, siteReference, settleSeconds)
        }
    }

    /// Moves every payment of `sends` from `prepared` to `submitting` (guarded by status), records their `sending`
    /// attempts and audit events, in one statement; returns the attempt id of each payment it moved. The attempts are
    /// inserted only for payments the guarded update moved, in batch order (ids ascending as the
    /// per-message path would assign them), with `clock_timestamp()` as `started_at` and the same send deadline and
    /// reconciliation time as `GatewayAttemptStore.begin`.
    public func beginSubmitting(_ sends: [SubmitSend], sendWindow: Double, actor: String, on connection: PostgresConnection) throws -> [UUID: Int64] {
        let submitting = try CheckedTransition(from: .prepared, to: .submitting)
        let rows = try connection.query(
            """
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
            """, [
            PostgresArray(sends.map(\.paymentId)), PostgresArray(sends.map(\.orderReference)), PostgresArray(sends.map(\.requestType)),
            submitting.from?.rawValue, submitting.to.rawValue, submitting.stage.rawValue, actor,
            PostgresArray(sends.map(\.siteReference)), sendWindow, PostgresArray(sends.map(\.settleSeconds)),
        ])
        var attempts: [UUID: Int64] = [:]
        for row in rows {
            attempts[try row.decode("payment_id", as: UUID.self)] = try row.decode("id", as: Int64.self)
        }
        return attempts
    }

    /// What a gateway answer writes into its attempt row (the columns `GatewayAttemptStore.finish` writes).
    public struct AttemptAnswer: Sendable {
        public let outcome: String
        public let errorCode, errorMessage, transactionReference, settleStatus, acquirerResponseCode, authCode, maskedPan: String?
        /// Trust Payments' `settleduedate` (`YYYY-MM-DD`), validated by the caller.
        public let settleDueDate: String?

        public init(outcome: String, errorCode: String?, errorMessage: String?, transactionReference: String?, settleStatus: String?,
                    acquirerResponseCode: String?, authCode: String?, maskedPan: String?, settleDueDate: String? = nil) {
            self.settleDueDate = settleDueDate
            (self.outcome, self.errorCode, self.errorMessage, self.transactionReference) = (outcome, errorCode, errorMessage, transactionReference)
            (self.settleStatus, self.acquirerResponseCode, self.authCode, self.maskedPan) = (settleStatus, acquirerResponseCode, authCode, maskedPan)
        }
    }

    /// A final answer that ends a `submitting` payment: its checked transition and the answer for its attempt.
    public struct SubmitEnding: Sendable {
        public let paymentId: UUID
        public let attemptId: Int64
        public let transition: CheckedTransition
        public let errorCode: String?
        public let detail: String?
        public let answer: AttemptAnswer

        public init(paymentId: UUID, attemptId: Int64, transition: CheckedTransition, errorCode: String?, detail: String?, answer: AttemptAnswer) {
            (self.paymentId, self.attemptId, self.transition, self.errorCode, self.detail, self.answer) =
                (paymentId, attemptId, transition, errorCode, detail, answer)
        }
    }

    /// Ends every payment of `endings` still in its transition's `from` status whose attempt is its current one
    /// (latest AUTH attempt, still `sending` or `uncertain`; locked in id order), completes that attempt (state
    /// `attemptState`) and records the audit events. Returns, per ending, the hand-off of the payment if it was ended,
    /// and whether every ended payment had its attempt completed. All transitions must leave the same status.
    /// `error_message` only changes when there is an error code, as in ``transition(_:from:to:actor:errorCode:detail:on:)``;
    /// the attempt is completed only for payments the guarded update ended.
    public func endSubmitting(
        _ endings: [SubmitEnding], attemptState: String, actor: String, on connection: PostgresConnection
    ) throws -> (messages: [StageMessage?], allAttemptsCompleted: Bool) {
        guard let from = endings.first?.transition.from else { return ([], true) }
        precondition(endings.allSatisfy { $0.transition.from == from }, "one source status per statement")
        let answers = endings.map(\.answer)
        let rows = try connection.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::int8[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                                     $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $18::text[])
                    WITH ORDINALITY AS t(payment_id, attempt_id, to_status, to_stage, error_code, detail, outcome, attempt_error_code,
                                         attempt_error_message, transaction_reference, settle_status, acquirer_response_code, auth_code,
                                         masked_pan, settle_due_date, n)),
            locked AS MATERIALIZED (
                SELECT p.id FROM payments p WHERE p.id = ANY($1::uuid[]) ORDER BY p.id FOR UPDATE),
            ended AS (
                UPDATE payments p SET status = i.to_status, stage = i.to_stage, updated_at = clock_timestamp(),
                       error_code = COALESCE(i.error_code, p.error_code),
                       error_message = COALESCE(CASE WHEN i.error_code IS NULL THEN NULL ELSE i.detail END, p.error_message)
                FROM input i JOIN locked l ON l.id = i.payment_id
                WHERE p.id = i.payment_id AND p.status = $15
                  AND EXISTS (
                      SELECT 1 FROM gateway_attempts a
                      WHERE a.id = i.attempt_id AND a.payment_id = i.payment_id AND a.state IN ('sending', 'uncertain')
                        AND NOT EXISTS (SELECT 1 FROM gateway_attempts b
                                        WHERE b.payment_id = a.payment_id AND b.id > a.id AND b.request_type <> 'TRANSACTIONQUERY'))
                RETURNING p.id, p.merchant_id, p.job_id, i.n, i.to_status, i.to_stage, i.error_code, i.detail),
            attempts AS (
                UPDATE gateway_attempts a SET state = $16, outcome = i.outcome, error_code = i.attempt_error_code,
                       error_message = i.attempt_error_message, transaction_reference = i.transaction_reference,
                       settle_status = i.settle_status, acquirer_response_code = i.acquirer_response_code, auth_code = i.auth_code,
                       masked_pan = i.masked_pan, settle_due_date = i.settle_due_date::date, finished_at = clock_timestamp()
                FROM input i JOIN ended e ON e.id = i.payment_id
                WHERE a.id = i.attempt_id AND a.state IN ('sending', 'uncertain')
                RETURNING a.id),
            events AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor, error_code, detail)
                SELECT id, $15, to_status, to_stage, $17, error_code, detail FROM ended ORDER BY n)
            SELECT id, merchant_id, job_id, n, (SELECT count(*) FROM attempts)::bigint AS settled FROM ended
            """,
            [
                PostgresArray(endings.map(\.paymentId)), PostgresArray(endings.map(\.attemptId)),
                PostgresArray(endings.map(\.transition.to.rawValue)), PostgresArray(endings.map(\.transition.stage.rawValue)),
                PostgresArray(endings.map(\.errorCode)), PostgresArray(endings.map(\.detail)),
                PostgresArray(answers.map(\.outcome)), PostgresArray(answers.map(\.errorCode)),
                PostgresArray(answers.map(\.errorMessage)), PostgresArray(answers.map(\.transactionReference)),
                PostgresArray(answers.map(\.settleStatus)), PostgresArray(answers.map(\.acquirerResponseCode)),
                PostgresArray(answers.map(\.authCode)), PostgresArray(answers.map(\.maskedPan)),
                from.rawValue, attemptState, actor, PostgresArray(answers.map(\.settleDueDate)),
            ])
        var ended = [StageMessage?](repeating: nil, count: endings.count)
        let completed = try rows.first.map { try $0.decode("settled", as: Int64.self) == Int64(rows.count) } ?? true
        for row in rows {
            ended[Int(try row.decode("n", as: Int64.self)) - 1] = try Self.message(row: row)
        }
        return (ended, completed)
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

    private static func message(row: PostgresRow) throws -> StageMessage {
        StageMessage(paymentId: try row.decode("id", as: UUID.self), merchantId: try row.decode("merchant_id", as: String.self),
                     jobId: try row.decode("job_id", as: String.self))
    }
}
