import Foundation
import Pipeline
import Postgres

/// A payment's stored-credential part as authorize's lock reads it (``AuthorizeStage/lockWithCardData(_:on:)``): the usage a CIT
/// stores, or an MIT's reason with its credential's usage, state and sealed references (the credential of the
/// payment's own merchant only: the join compares the merchant).
struct AuthorizeCredential: Sendable {
    static let columns = """
        p.store_credential, p.mit_reason, p.credential_id, cr.credential_usage, cr.credential_state, cr.credential_key_id,
        cr.credential_nonce, cr.credential_ciphertext
        """
    /// Every column renamed, so none clashes with a payment column ``AuthorizeStage/lockWithCardData(_:on:)`` selects.
    static let join = """
        LEFT JOIN (SELECT id AS credential_row, merchant_id AS credential_merchant, usage AS credential_usage, state AS credential_state,
                          key_id AS credential_key_id, nonce AS credential_nonce, ciphertext AS credential_ciphertext FROM credentials) cr
               ON cr.credential_row = p.credential_id AND cr.credential_merchant = p.merchant_id
        """

    let store: CredentialUsage?
    let mitReason: MITReason?
    let credentialId: String?
    let usage: CredentialUsage?
    let state: CredentialState?
    let sealed: DataVault.SealedBox?

    init(row: PostgresRow) throws {
        store = try row.decode("store_credential", as: String?.self).flatMap(CredentialUsage.init(rawValue:))
        mitReason = try row.decode("mit_reason", as: String?.self).flatMap(MITReason.init(rawValue:))
        credentialId = try row.decode("credential_id", as: String?.self)
        usage = try row.decode("credential_usage", as: String?.self).flatMap(CredentialUsage.init(rawValue:))
        state = try row.decode("credential_state", as: String?.self).flatMap(CredentialState.init(rawValue:))
        if let keyId = try row.decode("credential_key_id", as: String?.self), let nonce = try row.decode("credential_nonce", as: [UInt8]?.self),
           let ciphertext = try row.decode("credential_ciphertext", as: [UInt8]?.self) {
            sealed = DataVault.SealedBox(keyId: keyId, nonce: nonce, ciphertext: ciphertext)
        } else {
            sealed = nil
        }
    }

    /// What the connector is asked (nil: an ordinary payment), or the refusal of an MIT whose credential left `active`
    /// after decrypt checked it (an unlink in between): the same codes, still before any gateway call.
    func intent(_ credentials: CredentialStore) throws -> Result<StoredCredentialIntent?, Rejection> {
        if let store { return .success(.store(store)) }
        guard let mitReason else { return .success(nil) }
        guard let credentialId, let usage, let state else {
            return .failure(Rejection(code: "credential_unknown", reason: "the payment's credential is not one of its merchant's"))
        }
        switch state {
        case .unlinked: return .failure(Rejection(code: "credential_unlinked", reason: "the credential was unlinked before the payment was sent"))
        case .expired: return .failure(Rejection(code: "credential_expired", reason: "the credential expired before the payment was sent"))
        case .active: break
        }
        guard let sealed else {
            return .failure(Rejection(code: "credential_unlinked", reason: "the credential holds no references any more"))
        }
        let secrets = try credentials.open(sealed, credentialId: credentialId)
        return .success(.charge(mitReason, usage: usage, references: secrets.references))
    }
}
