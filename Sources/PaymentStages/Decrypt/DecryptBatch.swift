import Foundation
import JSON
import Pipeline
import Postgres

/// The payments of one decrypt batch that passed every token check in Swift, inserted in **one** statement already
/// `decrypted`, with their card data and both audit events.
///
/// Why: the one-by-one path costs four statements per job (insert + `received` event, claim the `transactionId`,
/// store card data, transition + event). Here the batch is verified first with one clock, `receivedAt`, which then
/// becomes the payments' `first_received_at`, so each token was checked against exactly its payment's first-received
/// time, as the one-by-one path does. `ON CONFLICT DO NOTHING` without an arbiter skips a row that hits *any* unique
/// key: an existing (merchant, job id) — a duplicate or redelivery — or a `transactionId` another payment already
/// claimed — a replay. A skipped row is not settled: the one-by-one path then finds the existing payment or detects
/// the replay and does exactly what it always did.
struct DecryptBatch {
    /// One job to insert, with the id its card data was sealed for (AAD = payment id).
    struct Row {
        let index: Int
        let paymentId: UUID
        let job: PaymentJob
        let transactionId: String
        let cardData: DataVault.SealedBox
    }

    private(set) var rows: [Row] = []
    private var transactionIds: Set<String> = []

    /// Whether no earlier row of this batch claims `transactionId`: a token repeated inside the batch is left to the
    /// one-by-one path, which fails the later job `token_replayed` in message order.
    func isUnclaimed(_ transactionId: String) -> Bool {
        !transactionIds.contains(transactionId)
    }

    mutating func append(_ row: Row) {
        precondition(isUnclaimed(row.transactionId), "a transactionId is claimed once per batch")
        transactionIds.insert(row.transactionId)
        rows.append(row)
    }

    /// The time as PostgreSQL stores it (whole microseconds), so the clock the tokens were verified with is exactly
    /// the `first_received_at` that is read back later.
    static func databaseTime(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1_000_000).rounded() / 1_000_000)
    }

    /// Inserts the rows and returns the ids of the payments actually created.
    ///
    /// The audit events are those of the one-by-one path: `NULL → received` (stage and actor `decrypt`, as
    /// `locateOrCreate` writes it) then `received → decrypted` (stage `authorize`, actor `decrypt`, as
    /// `PaymentStore.transition` writes it). Both come from a single `INSERT … ORDER BY` — data-modifying CTEs run in
    /// no defined order relative to each other, a sorted `INSERT … SELECT` assigns its serial ids in order — so every
    /// payment's events keep their order, and payments follow message order as they would one by one. The payments
    /// are inserted sorted by (merchant, job id), so two workers inserting overlapping jobs wait for each other in
    /// one order rather than deadlock.
    func insert(receivedAt: Date, on transaction: PostgresConnection) throws -> Set<UUID> {
        guard !rows.isEmpty else { return [] }
        let inserted = try transaction.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::int8[], $7::text[],
                                     $8::text[], $9::text[], $10::text[], $11::text[], $12::bytea[], $13::bytea[])
                    WITH ORDINALITY AS t(id, merchant_id, job_id, job_hash, order_reference, amount_minor, currency,
                                         notify_url, metadata, token_transaction_id, key_id, nonce, ciphertext, n)),
            inserted AS (
                INSERT INTO payments (id, merchant_id, job_id, job_hash, order_reference, amount_minor, currency,
                                      status, stage, token_transaction_id, notify_url, metadata, first_received_at, updated_at)
                SELECT id, merchant_id, job_id, job_hash, order_reference, amount_minor, currency,
                       'decrypted', 'authorize', token_transaction_id, notify_url, metadata::jsonb, $14, clock_timestamp()
                FROM input ORDER BY merchant_id, job_id
                ON CONFLICT DO NOTHING
                RETURNING id),
            card AS (
                INSERT INTO card_data (payment_id, key_id, nonce, ciphertext)
                SELECT input.id, input.key_id, input.nonce, input.ciphertext FROM input JOIN inserted USING (id)),
            events AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor)
                SELECT input.id, step.from_status, step.to_status, step.stage, 'decrypt'
                FROM input JOIN inserted USING (id)
                CROSS JOIN (VALUES (1, NULL, 'received', 'decrypt'), (2, 'received', 'decrypted', 'authorize'))
                    AS step(n, from_status, to_status, stage)
                ORDER BY input.n, step.n)
            SELECT id FROM inserted
            """,
            [
                PostgresArray(rows.map(\.paymentId)), PostgresArray(rows.map(\.job.merchantId)), PostgresArray(rows.map(\.job.jobId)),
                PostgresArray(rows.map(\.job.contentHash)), PostgresArray(rows.map(\.job.orderReference)),
                PostgresArray(rows.map(\.job.amount.value)), PostgresArray(rows.map(\.job.amount.currency.code)),
                PostgresArray(rows.map(\.job.notifyURL)), PostgresArray(rows.map { Self.metadataJSON($0.job.metadata) }),
                PostgresArray(rows.map(\.transactionId)), PostgresArray(rows.map(\.cardData.keyId)),
                PostgresArray(rows.map(\.cardData.nonce)), PostgresArray(rows.map(\.cardData.ciphertext)), receivedAt,
            ])
        return Set(try inserted.map { try $0.decode("id", as: UUID.self) })
    }

    /// The job's metadata as a JSON object for the `jsonb` column (which normalises key order), for both paths; written
    /// with the JSON module rather than `JSONEncoder`, which cost more than the rest of building the row.
    static func metadataJSON(_ metadata: [String: String]) -> String {
        JSONValue.object(metadata.map { (key: $0.key, value: .string($0.value)) }).serializedString
    }
}
