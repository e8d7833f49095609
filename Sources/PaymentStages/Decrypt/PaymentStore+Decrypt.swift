import Foundation
import JSON
import Pipeline
import Postgres

/// The decrypt stage's part of ``Pipeline/PaymentStore``'s set-based statements, kept with the stage that runs them (the
/// batch read, the new payments, the `received` ones settled). `PaymentStore` stays the one writer of `payments` and
/// `payment_events` (PaymentStore.swift); every status these statements bind comes from a ``Pipeline/CheckedTransition``.
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
            let status = try row.decodeChoice("status", as: PaymentStatus.self)
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
    /// the function again for every input row (pg_stat_statements counted one call per payment). Each payment keeps its
    /// job's trace context (`trace_parent`, `trace_state`: ``PaymentJob/traceparent``), which a re-drive continues.
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
                                     $25::text[], $26::text[], $27::text[], $28::text[], $29::text[], $30::text[], $31::text[], $32::text[])
                    WITH ORDINALITY AS t(id, merchant_id, job_id, job_hash, order_reference, amount_minor, currency,
                                         notify_url, metadata, token_transaction_id, key_id, nonce, ciphertext,
                                         status, stage, error_code, error_message, actor, job_capture_mode, job_capture_within,
                                         token_type, merchant_token_identifier, merchant_token_metadata, trace_parent, trace_state,
                                         store_credential, credential_id, mit_reason, n)),
            policy AS MATERIALIZED (
                SELECT k.merchant_id, k.job_capture_mode, k.job_capture_within, c.capture_mode, c.capture_within_seconds
                FROM (SELECT DISTINCT merchant_id, job_capture_mode, job_capture_within FROM input) k,
                     paypipe_capture_policy(k.merchant_id, k.job_capture_mode, k.job_capture_within) c),
            inserted AS (
                INSERT INTO payments (id, merchant_id, job_id, job_hash, order_reference, amount_minor, currency,
                                      status, stage, token_transaction_id, notify_url, metadata, error_code, error_message,
                                      first_received_at, updated_at, capture_mode, capture_within_seconds,
                                      token_type, merchant_token_identifier, merchant_token_metadata, trace_parent, trace_state,
                                      store_credential, credential_id, mit_reason)
                SELECT input.id, input.merchant_id, job_id, job_hash, order_reference, amount_minor, currency,
                       status, stage, token_transaction_id, notify_url, metadata::jsonb, error_code, error_message,
                       $19, clock_timestamp(), policy.capture_mode, policy.capture_within_seconds,
                       token_type, merchant_token_identifier, merchant_token_metadata::jsonb, trace_parent, trace_state,
                       store_credential, credential_id, mit_reason
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
                PostgresArray(rows.map(\.traceparent)), PostgresArray(rows.map(\.tracestate)),
                PostgresArray(rows.map { $0.job?.storeCredential?.rawValue }),
                // Only an accepted MIT links its credential: decrypt's checks validated the id for this merchant, and a
                // refused one (unknown, another merchant's) must not reference a credential it may not use.
                PostgresArray(rows.map { row -> String? in
                    if case .decrypted = row.settled { row.job?.merchantInitiated?.credentialId } else { nil }
                }),
                PostgresArray(rows.map { $0.job?.merchantInitiated?.reason.rawValue }),
            ])
        return Set(try inserted.map { try $0.decode("id", as: UUID.self) })
    }

    /// The actor of decrypt's own events.
    static let decryptActor = "decrypt"

    /// The job's metadata as a JSON object for the `jsonb` column (which normalises key order); written with the JSON
    /// module rather than `JSONEncoder`, which cost more than the rest of building the row.
    static func metadataJSON(_ metadata: [String: String]) -> String {
        JSONValue.object(metadata.map { (key: $0.key, value: .string($0.value)) }).serializedString
    }

    /// A payment found still `received` that decrypt settles `decrypted`: claims its `transactionId`, stores its card
    /// data and writes the event, for the payments still `received` (guarded); returns their ids. It records what the
    /// insert path records from the token and the job (``insertNew(_:receivedAt:on:)``): the token facts and the job's
    /// stored-credential members (`store_credential`; an accepted MIT's `credential_id` and `mit_reason`), so authorize
    /// sends a storing job as a CIT and an MIT with its credential whichever path settled it.
    public func decryptReceived(_ rows: [(id: UUID, job: PaymentJob?, verified: Decrypt.Verified<DataVault.SealedBox>)],
                                on transaction: PostgresConnection) throws -> Set<UUID> {
        guard !rows.isEmpty else { return [] }
        let decrypted = try CheckedTransition(from: .received, to: .decrypted)
        let updated = try transaction.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bytea[], $5::bytea[], $10::text[], $11::text[], $12::text[],
                                     $13::text[], $14::text[], $15::text[])
                    WITH ORDINALITY AS t(id, token_transaction_id, key_id, nonce, ciphertext,
                                         token_type, merchant_token_identifier, merchant_token_metadata,
                                         store_credential, credential_id, mit_reason, n)),
            updated AS (
                UPDATE payments p SET status = $7, stage = $8, token_transaction_id = input.token_transaction_id,
                       token_type = input.token_type, merchant_token_identifier = input.merchant_token_identifier,
                       merchant_token_metadata = input.merchant_token_metadata::jsonb, store_credential = input.store_credential,
                       credential_id = input.credential_id, mit_reason = input.mit_reason, updated_at = clock_timestamp()
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
                // Settled `decrypted`: decrypt's checks accepted the MIT's credential for this merchant.
                PostgresArray(rows.map { $0.job?.storeCredential?.rawValue }), PostgresArray(rows.map { $0.job?.merchantInitiated?.credentialId }),
                PostgresArray(rows.map { $0.job?.merchantInitiated?.reason.rawValue }),
            ])
        return Set(try updated.map { try $0.decode("id", as: UUID.self) })
    }
}
