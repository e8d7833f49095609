import Foundation
import JSON
import Postgres

/// The `credentials` table (migration 13), its one writer: stored credentials of customer-initiated payments
/// (docs/recurring.md). Stateless apart from the vault; callers own the transactions.
///
/// The secret half (``CredentialSecrets``) is sealed under the data key with the credential id as AAD, so a blob
/// copied to another row fails to open. It is shredded in the statement that moves a credential out of `active`
/// (unlinked or expired): a state change never leaves a secret behind.
public struct CredentialStore: Sendable {
    public let vault: DataVault

    public init(vault: DataVault) {
        self.vault = vault
    }

    /// One row of `credentials`, without its secrets (``secrets(_:on:)`` opens them).
    public struct Credential: Sendable, Equatable {
        public let id: String
        public let merchantId: String
        /// The customer-initiated payment that stored it.
        public let paymentId: UUID
        /// The connector (plug-in name) that stored it; its MITs go through the same connector.
        public let connector: String
        public let usage: CredentialUsage
        public let tokenType: TokenType
        public let network: String?
        public let last4: String?
        public let expiry: CardExpiry?
        /// Apple's `merchantTokenIdentifier` for an MPAN (not a card number).
        public let merchantTokenIdentifier: String?
        /// Apple's `merchantTokenMetadata` (card art, card metadata), `{}` when none.
        public let cardMetadata: JSONValue
        public let state: CredentialState
        public let stateReason: String?
        public let stateChangedAt: Date?
        public let isShredded: Bool
        public let createdAt: Date
        public let updatedAt: Date
    }

    /// What a customer-initiated payment stores.
    /// ``Credential``'s fields a merchant may see, as credential events carry them: id, usage, token type, network, last
    /// four digits, expiry and state. Never a secret (the sealed blob is not read).
    public static func publicFields(_ credential: Credential) -> JSONValue {
        var fields: [(key: String, value: JSONValue)] = [
            ("id", .string(credential.id)), ("usage", .string(credential.usage.rawValue)), ("tokenType", .string(credential.tokenType.rawValue)),
        ]
        if let network = credential.network { fields.append(("network", .string(network))) }
        if let last4 = credential.last4 { fields.append(("last4", .string(last4))) }
        if let expiry = credential.expiry { fields.append(("expiry", .string(expiry.description))) }
        fields.append(("state", .string(credential.state.rawValue)))
        return .object(fields)
    }

    public struct NewCredential: Sendable {
        public var merchantId: String
        public var paymentId: UUID
        public var connector: String
        public var usage: CredentialUsage
        public var tokenType: TokenType
        public var network: String?
        public var last4: String?
        public var expiry: CardExpiry?
        public var merchantTokenIdentifier: String?
        public var cardMetadata: JSONValue?
        public var secrets: CredentialSecrets

        public init(merchantId: String, paymentId: UUID, connector: String, usage: CredentialUsage, tokenType: TokenType,
                    network: String?, last4: String?, expiry: CardExpiry?, merchantTokenIdentifier: String?,
                    cardMetadata: JSONValue?, secrets: CredentialSecrets) {
            self.merchantId = merchantId
            self.paymentId = paymentId
            self.connector = connector
            self.usage = usage
            self.tokenType = tokenType
            self.network = network
            self.last4 = last4
            self.expiry = expiry
            self.merchantTokenIdentifier = merchantTokenIdentifier
            self.cardMetadata = cardMetadata
            self.secrets = secrets
        }
    }

    static let columns = """
        id, merchant_id, payment_id, connector, usage, token_type, network, last4, expiry, merchant_token_identifier,
        card_metadata, state, state_reason, state_changed_at, ciphertext IS NULL AS shredded, created_at, updated_at
        """

    /// Stores the credential of `new.paymentId`, or returns the one that payment already stored (a redelivered
    /// CIT stores once; the first row wins, whatever the second carries).
    @discardableResult
    public func create(_ new: NewCredential, on connection: PostgresConnection) throws -> Credential {
        let id = CredentialID.generate()
        let sealed = try seal(new.secrets, id: id)
        let metadata = PostgresJSONB(String(decoding: (new.cardMetadata ?? .object([])).serialized(), as: UTF8.self))
        let inserted = try connection.query(
            """
            INSERT INTO credentials (id, merchant_id, payment_id, connector, usage, token_type, network, last4, expiry,
                                     merchant_token_identifier, card_metadata, key_id, nonce, ciphertext)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
            ON CONFLICT (payment_id) DO NOTHING
            RETURNING \(Self.columns)
            """,
            [id, new.merchantId, new.paymentId, new.connector, new.usage.rawValue, new.tokenType.rawValue, new.network, new.last4,
             new.expiry?.description, new.merchantTokenIdentifier, metadata, sealed.keyId, sealed.nonce, sealed.ciphertext])
        if let row = inserted.first { return try Self.credential(row) }
        let existing = try connection.query("SELECT \(Self.columns) FROM credentials WHERE payment_id = $1", [new.paymentId])
        guard let row = existing.first else { throw PostgresError.decoding(column: "payment_id", expected: "credential", reason: "insert conflicted but no row") }
        return try Self.credential(row)
    }

    /// The merchant's credential `id`; `nil` for another merchant's (indistinguishable from a missing one).
    public func find(_ id: String, merchantId: String, forUpdate: Bool = false, on connection: PostgresConnection) throws -> Credential? {
        guard CredentialID.isValid(id) else { return nil }
        return try connection.query(
            "SELECT \(Self.columns) FROM credentials WHERE id = $1 AND merchant_id = $2\(forUpdate ? " FOR UPDATE" : "")",
            [id, merchantId]).first.map(Self.credential)
    }

    /// The credentials stored with Apple's `merchantTokenIdentifier` (Apple's events name the token, not our id),
    /// of one merchant when `merchantId` is given.
    public func find(merchantTokenIdentifier: String, merchantId: String? = nil, on connection: PostgresConnection) throws -> [Credential] {
        try connection.query(
            """
            SELECT \(Self.columns) FROM credentials
            WHERE merchant_token_identifier = $1 AND ($2::text IS NULL OR merchant_id = $2) ORDER BY created_at, id
            """, [merchantTokenIdentifier, merchantId]).map(Self.credential)
    }

    /// The merchant's credentials, newest first, optionally in one state.
    public func list(merchantId: String, state: CredentialState? = nil, limit: Int = 100, on connection: PostgresConnection) throws -> [Credential] {
        try connection.query(
            """
            SELECT \(Self.columns) FROM credentials
            WHERE merchant_id = $1 AND ($2::text IS NULL OR state = $2) ORDER BY created_at DESC, id LIMIT $3
            """, [merchantId, state?.rawValue, Int64(limit)]).map(Self.credential)
    }

    /// The sealed secrets of an active credential; `nil` once shredded.
    public func secrets(_ credential: Credential, on connection: PostgresConnection) throws -> CredentialSecrets? {
        let rows = try connection.query(
            "SELECT key_id, nonce, ciphertext FROM credentials WHERE id = $1 AND merchant_id = $2 AND ciphertext IS NOT NULL",
            [credential.id, credential.merchantId])
        guard let row = rows.first else { return nil }
        return try open(DataVault.SealedBox(keyId: try row.decode("key_id"), nonce: try row.decode("nonce"), ciphertext: try row.decode("ciphertext")),
                        credentialId: credential.id)
    }

    /// Opens a credential's sealed secrets read along with other rows (authorize's batch lock); AAD = the credential id,
    /// so a blob moved to another row fails to open.
    public func open(_ box: DataVault.SealedBox, credentialId: String) throws -> CredentialSecrets {
        try JSONDecoder().decode(CredentialSecrets.self, from: Data(try vault.open(box, aad: Self.aad(credentialId))))
    }

    func seal(_ secrets: CredentialSecrets, id: String) throws -> DataVault.SealedBox {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try vault.seal(Array(try encoder.encode(secrets)), aad: Self.aad(id))
    }

    static func aad(_ id: String) -> [UInt8] { Array(id.utf8) }

    static func credential(_ row: PostgresRow) throws -> Credential {
        let metadataText = try row.decode("card_metadata", as: PostgresJSONB.self).text
        return Credential(
            id: try row.decode("id"), merchantId: try row.decode("merchant_id"), paymentId: try row.decode("payment_id"),
            connector: try row.decode("connector"), usage: try row.decodeChoice("usage", as: CredentialUsage.self),
            tokenType: try row.decodeChoice("token_type", as: TokenType.self), network: try row.decode("network"), last4: try row.decode("last4"),
            expiry: try row.decode("expiry", as: String?.self).flatMap { CardExpiry($0) }, merchantTokenIdentifier: try row.decode("merchant_token_identifier"),
            cardMetadata: (try? JSONValue.parse(Array(metadataText.utf8))) ?? .object([]),
            state: try row.decodeChoice("state", as: CredentialState.self), stateReason: try row.decode("state_reason"),
            stateChangedAt: try row.decode("state_changed_at"), isShredded: try row.decode("shredded"),
            createdAt: try row.decode("created_at"), updatedAt: try row.decode("updated_at"))
    }
}
