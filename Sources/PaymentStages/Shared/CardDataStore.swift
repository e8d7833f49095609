import Foundation
import Pipeline
import Postgres

/// The `card_data` table: one encrypted ``StoredPaymentData`` per payment (AAD = payment id),
/// purged (ciphertext and nonce nulled: crypto-shredding) once the payment is terminal, by the `payments_terminal_purge`
/// trigger alone (migration 2), in the transaction that commits the terminal status.
public struct CardDataStore: Sendable {
    public let vault: DataVault

    public init(vault: DataVault) {
        self.vault = vault
    }

    public func save(_ data: StoredPaymentData, for paymentId: UUID, on connection: PostgresConnection) throws {
        let sealed = try seal(data, for: paymentId)
        try connection.query(
            """
            INSERT INTO card_data (payment_id, key_id, nonce, ciphertext) VALUES ($1, $2, $3, $4)
            ON CONFLICT (payment_id) DO UPDATE SET key_id = EXCLUDED.key_id, nonce = EXCLUDED.nonce,
                ciphertext = EXCLUDED.ciphertext, purged_at = NULL
            """,
            [paymentId, sealed.keyId, sealed.nonce, sealed.ciphertext])
    }

    /// The sealed form of `data` as ``save(_:for:on:)`` stores it (AAD = payment id), for set-based statements that
    /// insert many payments' card data at once.
    public func seal(_ data: StoredPaymentData, for paymentId: UUID) throws -> DataVault.SealedBox {
        try vault.seal(data.serialized(), aad: Self.aad(paymentId))
    }

    /// The stored data, or `nil` if none was stored or it was already purged.
    public func load(_ paymentId: UUID, on connection: PostgresConnection) throws -> StoredPaymentData? {
        let rows = try connection.query("SELECT key_id, nonce, ciphertext FROM card_data WHERE payment_id = $1 AND purged_at IS NULL", [paymentId])
        guard let row = rows.first else { return nil }
        return try open(row, for: paymentId)
    }

    /// Opens the card data in a row that selected `key_id`, `nonce` and `ciphertext` (`nil` when they are null:
    /// no card data, or already purged), for callers that read it along with other tables in one query.
    public func open(_ row: PostgresRow, for paymentId: UUID) throws -> StoredPaymentData? {
        guard let keyId = try row.decode("key_id", as: String?.self), let nonce = try row.decode("nonce", as: [UInt8]?.self),
              let ciphertext = try row.decode("ciphertext", as: [UInt8]?.self) else { return nil }
        let box = DataVault.SealedBox(keyId: keyId, nonce: nonce, ciphertext: ciphertext)
        return try StoredPaymentData(serialized: try vault.open(box, aad: Self.aad(paymentId)))
    }

    static func aad(_ paymentId: UUID) -> [UInt8] { Array(paymentId.paymentIDText.utf8) }
}
