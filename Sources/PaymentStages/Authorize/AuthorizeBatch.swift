import Foundation
import Pipeline
import Postgres

/// The payments of one authorize batch whose claims were built, stored and advanced `decrypted → prepared` in
/// **one** statement.
///
/// Why: the one-by-one path costs four statements per message (lock the payment, load its card data, insert the
/// request, transition + event). Here the batch costs two: ``lock(_:on:)`` and ``apply(on:)``.
struct AuthorizeBatch {
    /// One payment to advance, with its built request sealed for it (AAD = payment id).
    struct Row {
        let index: Int
        let payment: PaymentRecord
        let request: GatewayRequest
        let sealed: DataVault.SealedBox
    }

    private(set) var rows: [Row] = []

    mutating func append(_ row: Row) {
        rows.append(row)
    }

    /// Locks the payments (`FOR UPDATE`, as the one-by-one path does, so a concurrent delivery of the same payment
    /// waits and then sees the result) in id order, so two lanes locking overlapping batches cannot deadlock, and
    /// reads each one's unpurged card data along: the rows hold ``PaymentRecord/columns`` and `key_id`, `nonce`,
    /// `ciphertext` (null without card data) for ``CardDataStore/open(_:for:)``.
    static func lock(_ ids: [UUID], on transaction: PostgresConnection) throws -> [UUID: PostgresRow] {
        guard !ids.isEmpty else { return [:] }
        let rows = try transaction.query(
            """
            SELECT \(PaymentRecord.columns), c.key_id, c.nonce, c.ciphertext
            FROM payments p LEFT JOIN card_data c ON c.payment_id = p.id AND c.purged_at IS NULL
            WHERE p.id = ANY($1::uuid[])
            ORDER BY p.id
            FOR UPDATE OF p
            """, [PostgresArray(ids)])
        var locked: [UUID: PostgresRow] = [:]
        for row in rows {
            locked[try row.decode("id", as: UUID.self)] = row
        }
        return locked
    }

    /// Stores the requests, advances the payments still `decrypted` to `prepared` (stage `submit`) and writes one
    /// audit event each — the row ``PaymentStore/transition(_:from:to:actor:errorCode:detail:on:)`` writes — for the
    /// payments actually updated, whose ids it returns. The request insert keeps the one-by-one path's
    /// `ON CONFLICT (payment_id) DO NOTHING`: a stored request is never replaced.
    func apply(on transaction: PostgresConnection) throws -> Set<UUID> {
        guard !rows.isEmpty else { return [] }
        // Request types are validated tokens (`AUTH`, `THREEDQUERY`): a comma list per row, as GatewayRequestStore sends.
        let updated = try transaction.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::bytea[])
                    WITH ORDINALITY AS t(id, order_reference, request_types, key_id, nonce, ciphertext, n)),
            updated AS (
                UPDATE payments p SET status = 'prepared', stage = 'submit', updated_at = clock_timestamp()
                FROM input WHERE p.id = input.id AND p.status = 'decrypted'
                RETURNING p.id),
            request AS (
                INSERT INTO gateway_requests (payment_id, order_reference, request_types, key_id, nonce, ciphertext)
                SELECT input.id, input.order_reference, string_to_array(input.request_types, ','), input.key_id, input.nonce,
                       input.ciphertext
                FROM input JOIN updated USING (id)
                ON CONFLICT (payment_id) DO NOTHING),
            event AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor)
                SELECT input.id, 'decrypted', 'prepared', 'submit', 'authorize'
                FROM input JOIN updated USING (id)
                ORDER BY input.n)
            SELECT id FROM updated
            """,
            [
                PostgresArray(rows.map(\.payment.id)), PostgresArray(rows.map(\.request.orderReference)),
                PostgresArray(rows.map { $0.request.requestTypes.joined(separator: ",") }), PostgresArray(rows.map(\.sealed.keyId)),
                PostgresArray(rows.map(\.sealed.nonce)), PostgresArray(rows.map(\.sealed.ciphertext)),
            ])
        return Set(try updated.map { try $0.decode("id", as: UUID.self) })
    }
}
