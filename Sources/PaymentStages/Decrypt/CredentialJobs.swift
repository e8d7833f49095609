import Foundation
import Pipeline
import Postgres

/// Decrypt's part of issue #44 for jobs that store a credential (CIT, `storeCredential`) or charge one (MIT,
/// `initiator` `merchant`): the ``CredentialCheck`` refusals, made here, before any gateway call, with the batch's
/// credentials read in one statement (none for a batch without MIT jobs).
struct CredentialJobs {
    /// The batch's MIT credentials by id (any merchant: ``CredentialCheck`` compares the merchant).
    let credentials: [String: CredentialCheck.Stored]
    /// Their token types: an MIT reports the type of the token its credential was stored from.
    var tokenTypes: [String: TokenType] = [:]


    /// The key an MIT claims in place of a token's `transactionId` (it has no token): its own job key, so the column's
    /// uniqueness holds and no other job can claim it; nil for any other job.
    static func claimKey(_ job: PaymentJob) -> String? {
        job.merchantInitiated == nil ? nil : "mit:\(job.merchantId)/\(job.jobId)"
    }

    /// What decrypt stores for an accepted MIT: nothing to decrypt, only the job's contacts; authorize reads the
    /// credential's sealed references (``CredentialStore``) for the processor.
    static func merchantInitiated(_ job: PaymentJob) -> Decrypt.Verified<StoredPaymentData>? {
        guard let key = claimKey(job) else { return nil }
        let contacts = StoredPaymentData(decrypted: nil, walletToken: nil, paymentMethodDisplayName: nil, paymentMethodNetwork: nil,
                                         billingContact: job.billingContact, shippingContact: job.shippingContact)
        return Decrypt.Verified(transactionId: key, payload: contacts, token: TokenTypeCounter.facts(nil))
    }

    static func lookUp(_ jobs: [PaymentJob], on connection: PostgresConnection) throws -> CredentialJobs {
        let ids = Array(Set(jobs.compactMap(\.merchantInitiated?.credentialId)))
        guard !ids.isEmpty else { return CredentialJobs(credentials: [:]) }
        let rows = try connection.query(
            "SELECT id, merchant_id, connector, usage, state, expiry, token_type FROM credentials WHERE id = ANY($1::text[])", [PostgresArray(ids)])
        var credentials: [String: CredentialCheck.Stored] = [:]
        var tokenTypes: [String: TokenType] = [:]
        for row in rows {
            tokenTypes[try row.decode("id")] = TokenType(rawValue: try row.decode("token_type"))
            guard let usage = CredentialUsage(rawValue: try row.decode("usage")), let state = CredentialState(rawValue: try row.decode("state")) else { continue }
            credentials[try row.decode("id")] = CredentialCheck.Stored(
                merchantId: try row.decode("merchant_id"), connector: try row.decode("connector"), usage: usage, state: state,
                expiry: try row.decode("expiry", as: String?.self).flatMap { CardExpiry($0) })
        }
        return CredentialJobs(credentials: credentials, tokenTypes: tokenTypes)
    }

    /// An accepted MIT's verification with its credential's token type (decrypt saw no token of its own).
    func withCredentialTokenType(_ job: PaymentJob, _ verified: Result<Decrypt.Verified<StoredPaymentData>, Rejection>)
        -> Result<Decrypt.Verified<StoredPaymentData>, Rejection> {
        guard let id = job.merchantInitiated?.credentialId, let type = tokenTypes[id], case .success(let mit) = verified else { return verified }
        return .success(Decrypt.Verified(transactionId: mit.transactionId, payload: mit.payload, token: TokenFacts(type: type)))
    }

    /// The refusal of a CIT or MIT job for a merchant whose connector is `connector`, or nil: an accepted one goes on,
    /// authorize sends it with the connector's stored-credential fields and submit records a CIT's credential.
    func rejection(_ job: PaymentJob, connector: ConnectorKind?, at now: Date) -> Rejection? {
        let name = connector?.rawValue ?? "none"
        if let usage = job.storeCredential {
            return CredentialCheck.store(usage, connector: name, support: connector?.storedCredentials)
        }
        guard let mit = job.merchantInitiated else { return nil }
        return CredentialCheck.charge(
            merchantId: job.merchantId, credentialId: mit.credentialId, reason: mit.reason, stored: credentials[mit.credentialId],
            connector: name, support: connector?.storedCredentials, now: now)
    }
}
