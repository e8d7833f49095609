import ApplePay
import Foundation
import Pipeline
import Postgres

/// The `card_data` table: one encrypted ``StoredPaymentData`` (the value below, which only this store seals and opens)
/// per payment (AAD = payment id), purged (ciphertext and nonce nulled: crypto-shredding) once the payment is terminal,
/// by the `payments_terminal_purge` trigger alone (migration 2), in the transaction that commits the terminal status.
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

/// What the decrypt stage stores (encrypted) for the later stages: the card data Apple's token carried,
/// or for gateway-decrypts merchants the verified token itself, plus the job's contact details.
/// Crypto-shredded together once the payment is terminal.
public struct StoredPaymentData: Codable, Sendable {
    public var decrypted: DecryptedPaymentData?
    /// The token JSON as the backend sent it, for gateway-decrypts mode (`wallettoken`).
    public var walletToken: String?
    public var paymentMethodDisplayName: String?
    public var paymentMethodNetwork: String?
    public var billingContact: [String: String]?
    public var shippingContact: [String: String]?
    /// A processor's own one-time credential the job carried in place of any Apple Pay data
    /// (``ConnectorPlugin/credentialData(_:publishedAt:)``), its accessors in the connector's folder.
    public var credential: ProcessorCredential?

    public init(
        decrypted: DecryptedPaymentData?, walletToken: String?, paymentMethodDisplayName: String?,
        paymentMethodNetwork: String?, billingContact: [String: String]?, shippingContact: [String: String]?
    ) {
        self.decrypted = decrypted
        self.walletToken = walletToken
        self.paymentMethodDisplayName = paymentMethodDisplayName
        self.paymentMethodNetwork = paymentMethodNetwork
        self.billingContact = billingContact
        self.shippingContact = shippingContact
    }

    /// What decrypt stores for a job carrying a processor's credential: the credential and its publish time, with the
    /// job's contacts; no card data.
    public static func credential(_ credential: ProcessorCredential, billingContact: [String: String]?, shippingContact: [String: String]?) -> StoredPaymentData {
        var data = StoredPaymentData(decrypted: nil, walletToken: nil, paymentMethodDisplayName: nil, paymentMethodNetwork: nil,
                                     billingContact: billingContact, shippingContact: shippingContact)
        data.credential = credential
        return data
    }
}

/// A processor's one-time credential (single use, short-lived), stored under the connector's name for it (`name`) and
/// `<name>PublishedAt`: when its job was published (the AMQP `timestamp`, else its first receipt), which its age is
/// measured from.
public struct ProcessorCredential: Sendable, Equatable {
    public var name: String
    public var value: String?
    public var publishedAt: Date?
    /// The job's `amountPending`: a credential whose charge waits for its amount, so it lives as long as the
    /// connector documents for that kind (stored as `<name>AmountPending`, only when true).
    public var amountPending: Bool

    public init(name: String, value: String?, publishedAt: Date?, amountPending: Bool = false) {
        self.name = name
        self.value = value
        self.publishedAt = publishedAt
        self.amountPending = amountPending
    }

    var publishedAtName: String { name + "PublishedAt" }
    var amountPendingName: String { name + "AmountPending" }
}

extension StoredPaymentData {
    enum CodingKeys: String, CodingKey {
        case decrypted, walletToken, paymentMethodDisplayName, paymentMethodNetwork, billingContact, shippingContact
    }

    /// As synthesised, with the credential under its own names beside the other members.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            decrypted: try container.decodeIfPresent(DecryptedPaymentData.self, forKey: .decrypted),
            walletToken: try container.decodeIfPresent(String.self, forKey: .walletToken),
            paymentMethodDisplayName: try container.decodeIfPresent(String.self, forKey: .paymentMethodDisplayName),
            paymentMethodNetwork: try container.decodeIfPresent(String.self, forKey: .paymentMethodNetwork),
            billingContact: try container.decodeIfPresent([String: String].self, forKey: .billingContact),
            shippingContact: try container.decodeIfPresent([String: String].self, forKey: .shippingContact))
        let credentials = try decoder.container(keyedBy: AnyCodingKey.self)
        for name in ConnectorRegistry.credentialNames {
            var found = ProcessorCredential(name: name, value: nil, publishedAt: nil)
            found.value = try credentials.decodeIfPresent(String.self, forKey: AnyCodingKey(name))
            found.publishedAt = try credentials.decodeIfPresent(Date.self, forKey: AnyCodingKey(found.publishedAtName))
            found.amountPending = try credentials.decodeIfPresent(Bool.self, forKey: AnyCodingKey(found.amountPendingName)) ?? false
            if found.value != nil || found.publishedAt != nil { credential = found }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(decrypted, forKey: .decrypted)
        try container.encodeIfPresent(walletToken, forKey: .walletToken)
        try container.encodeIfPresent(paymentMethodDisplayName, forKey: .paymentMethodDisplayName)
        try container.encodeIfPresent(paymentMethodNetwork, forKey: .paymentMethodNetwork)
        try container.encodeIfPresent(billingContact, forKey: .billingContact)
        try container.encodeIfPresent(shippingContact, forKey: .shippingContact)
        if let credential {
            var credentials = encoder.container(keyedBy: AnyCodingKey.self)
            try credentials.encodeIfPresent(credential.value, forKey: AnyCodingKey(credential.name))
            try credentials.encodeIfPresent(credential.publishedAt, forKey: AnyCodingKey(credential.publishedAtName))
            if credential.amountPending { try credentials.encode(true, forKey: AnyCodingKey(credential.amountPendingName)) }
        }
    }
}
