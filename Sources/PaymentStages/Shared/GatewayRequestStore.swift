import Foundation
import JWT
import Pipeline
import Postgres

/// The `gateway_requests` table: one built request per payment, its claims sealed under the data key
/// (AAD = payment id) because in merchant-decrypts mode they carry the PAN and cryptogram.
///
/// The row is written once and never replaced, so every attempt — a retry after an outage, a redelivered message,
/// a re-drive by the reconciler — sends the same order reference and request content. The
/// `payments_terminal_purge` trigger crypto-shreds it together with the card data once the payment is terminal.
public struct GatewayRequestStore: Sendable {
    public let vault: DataVault

    public init(vault: DataVault) {
        self.vault = vault
    }

    /// Why a stored request cannot be used; a bug or tampering, never bad input.
    public enum StoreError: Error, Equatable, CustomStringConvertible {
        case malformedClaims(paymentId: UUID)

        public var description: String {
            switch self {
            case .malformedClaims(let id): "stored gateway request of payment \(id) is not a JSON claims object"
            }
        }
    }

    /// The sealed claims (AAD = payment id) as ``PaymentStore/prepare(_:actor:on:)`` stores them, never replacing a
    /// stored request.
    public func seal(_ request: GatewayRequest, for paymentId: UUID) throws -> DataVault.SealedBox {
        try vault.seal(request.claims.serialized(), aad: CardDataStore.aad(paymentId))
    }

    /// The stored request, or `nil` if none was built or it was purged.
    public func load(_ paymentId: UUID, on connection: PostgresConnection) throws -> GatewayRequest? {
        let rows = try connection.query(Self.loadStatement, [paymentId])
        guard let row = rows.first else { return nil }
        return try open(row, for: paymentId)
    }

    /// The columns ``open(_:for:)`` reads, selected from `gateway_requests` under the alias `alias` and renamed so
    /// they can sit beside a `payments` row in one join (the submit stage's set-based planning).
    public static func columns(_ alias: String) -> String {
        """
        \(alias).order_reference AS request_order_reference, array_to_string(\(alias).request_types, ',') AS request_types,
        \(alias).key_id AS request_key_id, \(alias).nonce AS request_nonce, \(alias).ciphertext AS request_ciphertext
        """
    }

    private static let loadStatement = """
        SELECT \(columns("g")) FROM gateway_requests g
        WHERE g.payment_id = $1 AND g.purged_at IS NULL AND g.ciphertext IS NOT NULL
        """

    /// Opens the request in a row that selected ``columns(_:)``; `nil` when they are null (no request stored, or
    /// already purged: an outer join found nothing).
    public func open(_ row: PostgresRow, for paymentId: UUID) throws -> GatewayRequest? {
        guard let keyId = try row.decode("request_key_id", as: String?.self), let nonce = try row.decode("request_nonce", as: [UInt8]?.self),
              let ciphertext = try row.decode("request_ciphertext", as: [UInt8]?.self) else { return nil }
        let plaintext = try vault.open(DataVault.SealedBox(keyId: keyId, nonce: nonce, ciphertext: ciphertext), aad: CardDataStore.aad(paymentId))
        guard let claims = try? JSONValue.parse(plaintext), claims.objectValue != nil, claims["payload"]?.objectValue != nil else {
            throw StoreError.malformedClaims(paymentId: paymentId)
        }
        return GatewayRequest(
            orderReference: try row.decode("request_order_reference", as: String.self),
            requestTypes: try row.decode("request_types", as: String.self).split(separator: ",").map(String.init),
            claims: claims)
    }
}

/// A built connector request: claims-shaped JSON (`iss`, `iat`, `payload`) plus the two facts the submit stage
/// needs without decrypting them (the order reference and the request types).
///
/// The claims are what is persisted (encrypted) and re-signed at send time, so every attempt for a payment sends
/// the same `orderreference` and the same request content, only with a fresh `iat`.
public struct GatewayRequest: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let orderReference: String
    public let requestTypes: [String]
    /// A JSON object: `{"iss":…,"iat":…,"payload":{…}}`, serialised deterministically by ``JSONValue``.
    public let claims: JSONValue

    public init(orderReference: String, requestTypes: [String], claims: JSONValue) {
        self.orderReference = orderReference
        self.requestTypes = requestTypes
        self.claims = claims
    }

    /// Claims in merchant-decrypts mode carry the PAN and cryptogram: only the masked form is ever shown.
    public var description: String {
        "GatewayRequest(order: \(orderReference), types: \(requestTypes), claims: \(ClaimsRedactor.masked(claims).serializedString))"
    }

    public var debugDescription: String { description }

    /// `dump` and reflection-based printing see the masked description only.
    public var customMirror: Mirror { Mirror(self, children: ["masked": description], displayStyle: .struct) }
}

/// The columns of a payment the gateway request is built from, as authorize's lock reads them
/// (``AuthorizeStage/lockWithCardData(_:on:)``), a plain value so the claims builder stays a pure function that tests
/// can call without a database row.
public struct GatewayPaymentDetails: Sendable, Equatable {
    public var paymentId: UUID
    /// The job's order reference; `nil` when the job failed before it was known.
    public var orderReference: String?
    /// Minor units.
    public var amountMinor: Int64?
    /// ISO 4217 alpha-3, as the job gave it.
    public var currency: String?
    /// The stored-credential part of the payment (nil: an ordinary one-off payment).
    public var storedCredential: StoredCredentialIntent? = nil

    public init(paymentId: UUID, orderReference: String?, amountMinor: Int64?, currency: String?) {
        self.paymentId = paymentId
        self.orderReference = orderReference
        self.amountMinor = amountMinor
        self.currency = currency
    }

    /// The `orderreference` sent to the gateway: the job's order reference, else the payment id.
    ///
    /// It must never change between attempts, because the submit stage finds an uncertain AUTH again by querying
    /// the gateway for this reference; both sources are fixed when the payment row is created.
    public var gatewayOrderReference: String {
        if let orderReference, !orderReference.isEmpty { return orderReference }
        return paymentId.paymentIDText
    }
}

/// What a payment asks of its connector about stored credentials (docs/recurring.md), in neutral terms; each
/// connector's folder maps it to its processor's fields (`<Name>StoredCredentials.swift`, docs/recurring.md "Per
/// connector").
public enum StoredCredentialIntent: Sendable, Equatable, CustomStringConvertible {
    /// A customer-initiated payment (CIT) that stores its credential for `usage`.
    case store(CredentialUsage)
    /// A merchant-initiated payment (MIT) charging a stored credential: its reason, the usage the credential was stored
    /// for, and the processor's references sealed with it (``CredentialSecrets/references``). No card data goes along.
    case charge(MITReason, usage: CredentialUsage, references: [String: String])

    /// The references are secret (they can charge the card): only their names are shown.
    public var description: String {
        switch self {
        case .store(let usage): "store(\(usage.rawValue))"
        case .charge(let reason, let usage, let references):
            "charge(\(reason.rawValue), usage: \(usage.rawValue), references: \(references.keys.sorted()))"
        }
    }
}
