import Foundation
import Pipeline
import Postgres

/// Decrypt's part of issue #44 for jobs that store a credential (CIT, `storeCredential`) or charge one (MIT,
/// `initiator` `merchant`): the ``CredentialCheck`` refusals, made here, before any gateway call, with the batch's
/// credentials read in one statement (none for a batch without MIT jobs).
struct CredentialJobs {
    /// The batch's MIT credentials by id (any merchant: ``CredentialCheck`` compares the merchant).
    let credentials: [String: CredentialCheck.Stored]

    /// Whether the pipeline after decrypt sends stored-credential AUTHs (the processor fields of the connectors' folders)
    /// and records the credential of a CIT. Until it does, a job the checks accept is refused `credential_not_supported`
    /// rather than paid as a plain payment: a CIT must never authorise without storing, an MIT never without its
    /// credential (docs/recurring.md, "Status").
    static let pipelineSendsStoredCredentials = false

    static func load(_ jobs: [PaymentJob], on connection: PostgresConnection) throws -> CredentialJobs {
        let ids = Array(Set(jobs.compactMap(\.merchantInitiated?.credentialId)))
        guard !ids.isEmpty else { return CredentialJobs(credentials: [:]) }
        let rows = try connection.query(
            "SELECT id, merchant_id, connector, usage, state, expiry FROM credentials WHERE id = ANY($1::text[])", [PostgresArray(ids)])
        var credentials: [String: CredentialCheck.Stored] = [:]
        for row in rows {
            guard let usage = CredentialUsage(rawValue: try row.decode("usage")), let state = CredentialState(rawValue: try row.decode("state")) else { continue }
            credentials[try row.decode("id")] = CredentialCheck.Stored(
                merchantId: try row.decode("merchant_id"), connector: try row.decode("connector"), usage: usage, state: state,
                expiry: try row.decode("expiry", as: String?.self).flatMap { CardExpiry($0) })
        }
        return CredentialJobs(credentials: credentials)
    }

    /// The refusal of a CIT or MIT job for a merchant whose connector is `connector`, or nil for any other job.
    func rejection(_ job: PaymentJob, connector: ConnectorKind?, at now: Date) -> Rejection? {
        let name = connector?.rawValue ?? "none"
        if let usage = job.storeCredential {
            return CredentialCheck.store(usage, connector: name, support: connector?.storedCredentials) ?? Self.notSent(name)
        }
        guard let mit = job.merchantInitiated else { return nil }
        return CredentialCheck.charge(
            merchantId: job.merchantId, credentialId: mit.credentialId, reason: mit.reason, stored: credentials[mit.credentialId],
            connector: name, support: connector?.storedCredentials, now: now) ?? Self.notSent(name)
    }

    private static func notSent(_ connector: String) -> Rejection? {
        pipelineSendsStoredCredentials ? nil : Rejection(
            code: "credential_not_supported",
            reason: "this release checks stored-credential jobs but does not yet send them to \(connector) (docs/recurring.md)")
    }
}
