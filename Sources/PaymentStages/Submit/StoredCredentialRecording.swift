import ApplePay
import Foundation
import JSON
import Pipeline
import Postgres

/// Submit's part of stored credentials (docs/recurring.md): a storing (customer-initiated) payment that ends
/// `authorized` records its credential in the recording transaction (``CredentialStore/create(_:on:)``: one per storing
/// payment, so a redelivered or reconciled answer finds it stored and adds nothing).
///
/// Two steps around the ending statement: ``read(_:on:)`` before it, while the payment's card data still exists (the
/// terminal purge shreds it in the same statement), takes what the credential shows (network, last four digits,
/// expiry, from Apple's merchant-token metadata, else the decrypted token); ``record(_:read:on:)`` after it stores the
/// credentials of the payments that did end `authorized`, with the processor's references from the answer
/// (``ConnectorPlugin/credentialReferences(of:)``), sealed. No PAN and no network token is kept.
struct StoredCredentialRecording {
    let credentials: CredentialStore
    let cardData: CardDataStore

    /// What a storing payment's credential shows, read before its card data is shredded.
    struct Pending: Sendable {
        let merchantId: String
        let usage: CredentialUsage
        let tokenType: TokenType
        let network: String?
        let last4: String?
        let expiry: CardExpiry?
        let merchantTokenIdentifier: String?
        let cardMetadata: JSONValue?
    }

    /// The storing payments among `paymentIds` (one statement; none for a batch without them).
    func read(_ paymentIds: [UUID], on transaction: PostgresConnection) throws -> [UUID: Pending] {
        guard !paymentIds.isEmpty else { return [:] }
        let rows = try transaction.query(
            """
            SELECT p.id, p.merchant_id, p.store_credential, p.token_type, p.merchant_token_identifier,
                   p.merchant_token_metadata::text AS merchant_token_metadata, c.key_id, c.nonce, c.ciphertext
            FROM payments p LEFT JOIN card_data c ON c.payment_id = p.id AND c.purged_at IS NULL
            WHERE p.id = ANY($1::uuid[]) AND p.store_credential IS NOT NULL
            """, [PostgresArray(paymentIds)])
        var pending: [UUID: Pending] = [:]
        for row in rows {
            let id = try row.decode("id", as: UUID.self)
            guard let usage = CredentialUsage(rawValue: try row.decode("store_credential")) else { continue }
            let data = try row.decode("key_id", as: String?.self) == nil ? nil : try cardData.open(row, for: id)
            let metadataText = try row.decode("merchant_token_metadata", as: String?.self)
            let metadata = try metadataText.flatMap { try JSONDecoder().decode(DecryptedPaymentData.MerchantTokenMetadata.self, from: Data($0.utf8)) }
            let expiry = metadata?.cardMetadata?.expirationDate.flatMap { CardExpiry(cardMetadataExpirationDate: $0) }
                ?? data?.decrypted.flatMap { CardExpiry(applicationExpirationDate: $0.applicationExpirationDate) }
            let last4 = metadata?.cardMetadata?.fpanSuffix.flatMap { suffix in
                suffix.utf8.count == 4 && suffix.utf8.allSatisfy { (0x30...0x39).contains($0) } ? suffix : nil
            }
            pending[id] = Pending(
                merchantId: try row.decode("merchant_id"), usage: usage,
                tokenType: TokenType(rawValue: try row.decode("token_type", as: String?.self) ?? "") ?? .unknown,
                network: data?.paymentMethodNetwork.map { String($0.prefix(32)) }, last4: last4, expiry: expiry,
                merchantTokenIdentifier: try row.decode("merchant_token_identifier", as: String?.self),
                cardMetadata: metadataText.flatMap { try? JSONValue.parse(Array($0.utf8)) }?["cardMetadata"])
        }
        return pending
    }

    /// Stores the credential of each storing payment that ended `authorized` (`ended`: payment, its connector, the
    /// answer). A storing payment whose answer names no reference stores nothing: it is paid, but no MIT could use it.
    func record(_ ended: [(paymentId: UUID, connector: ConnectorKind, result: GatewayResult)], read pending: [UUID: Pending],
                on transaction: PostgresConnection) throws {
        for (paymentId, connector, result) in ended where result.outcome == .authorized {
            guard let stored = pending[paymentId] else { continue }
            let references = connector.plugin.credentialReferences(of: result)
            guard !references.isEmpty else { continue }
            _ = try credentials.create(CredentialStore.NewCredential(
                merchantId: stored.merchantId, paymentId: paymentId, connector: connector.rawValue, usage: stored.usage,
                tokenType: stored.tokenType, network: stored.network, last4: stored.last4, expiry: stored.expiry,
                merchantTokenIdentifier: stored.merchantTokenIdentifier, cardMetadata: stored.cardMetadata,
                secrets: CredentialSecrets(references: references)), on: transaction)
        }
    }
}
