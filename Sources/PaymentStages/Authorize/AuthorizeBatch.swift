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

    /// Stores the requests and advances the payments still `decrypted` to `prepared` with their audit events
    /// (``PaymentStore/prepare(_:actor:on:)``); returns the ids of the payments actually updated.
    func apply(on transaction: PostgresConnection) throws -> Set<UUID> {
        try PaymentStore().prepare(
            rows.map { PaymentStore.PreparedRequest(paymentId: $0.payment.id, orderReference: $0.request.orderReference,
                                                    requestTypes: $0.request.requestTypes, sealed: $0.sealed) },
            actor: "authorize", on: transaction)
    }
}
