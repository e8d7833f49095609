import ApplePay
import Foundation
import PaymentStages
import Pipeline
import Postgres

/// Everything the decrypt and authorize stages write about one payment, minus what must differ between two
/// payments (ids, timestamps, random nonces): two runs of the same kind of message compare equal exactly when they
/// left the same rows.
struct PaymentSnapshot: Equatable, CustomStringConvertible {
    /// The stored card data in comparable form (``StoredPaymentData`` is not `Equatable`).
    struct Card: Equatable {
        let decrypted: DecryptedPaymentData?
        let walletToken: String?
        let displayName: String?
        let network: String?
        let billing: [String: String]?
        let shipping: [String: String]?
    }

    let status: String
    let stage: String
    let errorCode: String?
    let errorMessage: String?
    let amountMinor: Int64?
    let currency: String?
    let notifyURL: String?
    /// `metadata` as PostgreSQL prints the jsonb (normalised key order).
    let metadata: String
    let tokenClaimed: Bool
    /// `from→to stage actor code detail`, in id order.
    let events: [String]
    /// Whether card data is held (not purged), and its content.
    let cardHeld: Bool
    let card: Card?
    let request: GatewayRequest?

    var description: String {
        "\(status)/\(stage) \(errorCode ?? "-") events \(events) card \(cardHeld ? "held" : "none") request \(request == nil ? "none" : "stored")"
    }

    static func load(_ id: UUID, vault: DataVault, on database: PostgresConnection) throws -> PaymentSnapshot? {
        guard let row = try database.query(
            """
            SELECT status, stage, error_code, error_message, amount_minor, currency, notify_url, metadata::text AS metadata,
                   token_transaction_id IS NOT NULL AS claimed
            FROM payments WHERE id = $1
            """, [id]).first else { return nil }
        let events = try database.query(
            "SELECT from_status, to_status, stage, actor, error_code, detail FROM payment_events WHERE payment_id = $1 ORDER BY id", [id]
        ).map { event in
            [try event.decode("from_status", as: String?.self) ?? "NULL", "→", try event.decode("to_status", as: String.self), " ",
             try event.decode("stage", as: String.self), " ", try event.decode("actor", as: String.self), " ",
             try event.decode("error_code", as: String?.self) ?? "-", " ", try event.decode("detail", as: String?.self) ?? "-"].joined()
        }
        let stored = try CardDataStore(vault: vault).load(id, on: database)
        return PaymentSnapshot(
            status: try row.decode("status", as: String.self), stage: try row.decode("stage", as: String.self),
            errorCode: try row.decode("error_code", as: String?.self), errorMessage: try row.decode("error_message", as: String?.self),
            amountMinor: try row.decode("amount_minor", as: Int64?.self), currency: try row.decode("currency", as: String?.self),
            notifyURL: try row.decode("notify_url", as: String?.self), metadata: try row.decode("metadata", as: String.self),
            tokenClaimed: try row.decode("claimed", as: Bool.self), events: events,
            cardHeld: !(try database.query("SELECT 1 FROM card_data WHERE payment_id = $1 AND ciphertext IS NOT NULL", [id]).isEmpty),
            card: stored.map {
                Card(decrypted: $0.decrypted, walletToken: $0.walletToken, displayName: $0.paymentMethodDisplayName,
                     network: $0.paymentMethodNetwork, billing: $0.billingContact, shipping: $0.shippingContact)
            },
            request: try GatewayRequestStore(vault: vault).load(id, on: database))
    }
}
