import ApplePay
import Crypto
import Foundation
import JSON
import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

extension Integration {
/// Issue #44's refusals on the real database, through the decrypt stage as the worker runs it: a storing job of a
/// TapPay merchant, and an MIT for each failure code on Trust Payments and OPP merchants, fail with their code and
/// leave no gateway request and no gateway attempt (nothing could reach a processor).
@Suite struct CredentialJobTests {
    struct Setup {
        let harness: DecryptHarness
        let stage: DecryptStage
        let store: CredentialStore
    }

    /// The sandbox merchants (Trust Payments, OPP, TapPay) applied, and one stored credential per `(merchant, usage,
    /// state, expiry)` given, each on a storing payment of its merchant.
    static func setup() throws -> Setup {
        let harness = try DecryptHarness()
        let database = try TestServices.database()
        defer { database.close() }
        let main = harness.sandbox.merchantDocument()
        let merchants = MerchantStore(vault: harness.vault)
        for document in [harness.sandbox.oppMerchantDocument(from: main), harness.sandbox.tapPayMerchantDocument(from: main)] {
            try merchants.apply(document, baseDirectory: URL(fileURLWithPath: harness.sandbox.directory), deployment: .sandbox, on: database)
        }
        return Setup(harness: harness, stage: harness.makeStage(), store: CredentialStore(vault: harness.vault))
    }

    static func storeCredential(_ setup: Setup, merchant: String, usage: CredentialUsage = .recurring, connector: ConnectorKind,
                                expiry: CardExpiry? = CardExpiry(year: 2099, month: 12), on database: PostgresConnection) throws -> CredentialStore.Credential {
        let paymentId = UUID()
        try database.query(
            """
            INSERT INTO payments (id, merchant_id, job_id, job_hash, amount_minor, currency, status, stage, first_received_at)
            VALUES ($1, $2, $3, $4, 999, 'GBP', 'failed', 'done', now())
            """, [paymentId, merchant, "cit-\(paymentId)", [UInt8(1)]])
        return try setup.store.create(CredentialStore.NewCredential(
            merchantId: merchant, paymentId: paymentId, connector: connector.rawValue, usage: usage, tokenType: .merchant, network: "Visa",
            last4: "4242", expiry: expiry, merchantTokenIdentifier: "DNITHE" + String(paymentId.paymentIDText.prefix(12)), cardMetadata: nil,
            secrets: CredentialSecrets(references: ["parentTransactionReference": "59-9-1"])), on: database)
    }

    static func mit(_ jobId: String, merchant: String, credentialId: String, reason: MITReason) throws -> DecryptInput {
        let object: [String: Any] = [
            "jobId": jobId, "merchantId": merchant, "orderReference": "order-\(jobId)", "amount": ["value": 999, "currency": "GBP"],
            "initiator": "merchant", "credentialId": credentialId, "mitReason": reason.rawValue,
        ]
        return .job(try PaymentJob.decode(Array(try JSONSerialization.data(withJSONObject: object))))
    }

    /// Each job's (status, code), and that no gateway request or attempt exists for any payment of the run.
    static func outcomes(_ setup: Setup, _ inputs: [DecryptInput], on database: PostgresConnection) throws -> [String: String] {
        #expect(setup.stage.process(inputs, database: database).allSatisfy { (try? $0.get()) != nil })
        var codes: [String: String] = [:]
        for row in try database.query("SELECT job_id, status, error_code FROM payments WHERE job_id NOT LIKE 'cit-%'") {
            codes[try row.decode("job_id")] = "\(try row.decode("status", as: String.self)) \(try row.decode("error_code", as: String?.self) ?? "-")"
        }
        #expect(try database.query("SELECT count(*) AS n FROM gateway_requests")[0].decode("n", as: Int64.self) == 0)
        #expect(try database.query("SELECT count(*) AS n FROM gateway_attempts")[0].decode("n", as: Int64.self) == 0)
        return codes
    }

    @Test(arguments: [SandboxEnvironment.merchantId, SandboxEnvironment.oppMerchantId])
    func anMITIsRefusedForEachCodeBeforeAnyCall(_ merchant: String) throws {
        let setup = try Self.setup()
        let database = try TestServices.database()
        defer { database.close() }
        let connector = SandboxEnvironment.connector(ofMerchant: merchant)
        let other = merchant == SandboxEnvironment.merchantId ? SandboxEnvironment.oppMerchantId : SandboxEnvironment.merchantId
        let active = try Self.storeCredential(setup, merchant: merchant, connector: connector, on: database)
        let unlinked = try Self.storeCredential(setup, merchant: merchant, connector: connector, on: database)
        #expect(try setup.store.markUnlinked(unlinked.id, merchantId: merchant, reason: "USER", on: database) != .notFound)
        let expired = try Self.storeCredential(setup, merchant: merchant, connector: connector, expiry: CardExpiry(year: 2020, month: 1), on: database)
        let othersCredential = try Self.storeCredential(setup, merchant: other, connector: SandboxEnvironment.connector(ofMerchant: other), on: database)
        let codes = try Self.outcomes(setup, [
            try Self.mit("unknown", merchant: merchant, credentialId: CredentialID.generate(), reason: .recurring),
            try Self.mit("others", merchant: merchant, credentialId: othersCredential.id, reason: .recurring),
            try Self.mit("unlinked", merchant: merchant, credentialId: unlinked.id, reason: .recurring),
            try Self.mit("expired", merchant: merchant, credentialId: expired.id, reason: .recurring),
            try Self.mit("usage", merchant: merchant, credentialId: active.id, reason: .installment),
            try Self.mit("accepted", merchant: merchant, credentialId: active.id, reason: .recurring),
        ], on: database)
        #expect(codes == [
            "unknown": "failed credential_unknown", "others": "failed credential_unknown", "unlinked": "failed credential_unlinked",
            "expired": "failed credential_expired", "usage": "failed credential_usage_mismatch",
            // The checks pass: nothing to decrypt, on to authorize with its credential linked.
            "accepted": "decrypted -",
        ])
        let linked = try database.query("SELECT credential_id, mit_reason, token_transaction_id, token_type FROM payments WHERE job_id = 'accepted'")[0]
        #expect(try linked.decode("token_type", as: String?.self) == "merchant", "the type of the token the credential was stored from")
        #expect(try linked.decode("credential_id", as: String?.self) == active.id && linked.decode("mit_reason", as: String?.self) == "recurring")
        #expect(try linked.decode("token_transaction_id", as: String?.self) == "mit:\(merchant)/accepted")
        #expect(try database.query("SELECT count(*) AS n FROM payments WHERE credential_id IS NOT NULL AND job_id <> 'accepted'")[0]
            .decode("n", as: Int64.self) == 0, "a refused MIT links no credential")
    }

    /// A payment found still `received` (a row an earlier release inserted before settling it, or one an operator put
    /// back) is settled by decrypt's update path with its job's stored-credential members, as the insert path would:
    /// a storing job's usage, an MIT's credential and reason. Without them authorize would send a CIT as a one-off
    /// payment and an MIT with no credential.
    @Test(arguments: [SandboxEnvironment.merchantId, SandboxEnvironment.oppMerchantId])
    func aPaymentFoundReceivedIsSettledWithItsJobsCredentialMembers(_ merchant: String) throws {
        let setup = try Self.setup()
        let database = try TestServices.database()
        defer { database.close() }
        let connector = SandboxEnvironment.connector(ofMerchant: merchant)
        let active = try Self.storeCredential(setup, merchant: merchant, connector: connector, on: database)
        let mit = try Self.mit("mit", merchant: merchant, credentialId: active.id, reason: .recurring)
        let storing = DecryptInput.job(try PaymentJob.decode(try SandboxEnvironment.jobBody(
            "cit", token: setup.harness.token(), merchantId: merchant, extra: ["storeCredential": ["usage": "installment"]])))
        let jobs = [storing, mit]
        #expect(try Self.outcomes(setup, jobs, on: database) == ["cit": "decrypted -", "mit": "decrypted -"])
        // Back to `received` with none of the members, as a row that was never settled by this release.
        try database.query(
            """
            UPDATE payments SET status = 'received', stage = 'decrypt', token_transaction_id = NULL, store_credential = NULL,
                   credential_id = NULL, mit_reason = NULL, token_type = NULL WHERE job_id IN ('cit', 'mit')
            """)
        #expect(try Self.outcomes(setup, jobs, on: database) == ["cit": "decrypted -", "mit": "decrypted -"])
        let rows = try database.query(
            "SELECT job_id, store_credential, credential_id, mit_reason, token_type FROM payments WHERE job_id IN ('cit', 'mit') ORDER BY job_id")
        let members = try rows.map { row in
            try ["job_id", "store_credential", "credential_id", "mit_reason", "token_type"].map { try row.decode($0, as: String?.self) ?? "-" }
                .joined(separator: " ")
        }
        #expect(members == ["cit installment - - device", "mit - \(active.id) recurring merchant"], "\(members)")
    }

    @Test func tapPayRefusesStoringAndMerchantInitiatedJobsBeforeAnyCall() throws {
        let setup = try Self.setup()
        let database = try TestServices.database()
        defer { database.close() }
        let storing: [String: Any] = [
            "jobId": "tp-store", "merchantId": SandboxEnvironment.tapPayMerchantId, "orderReference": "o-tp", "amount": ["value": 999, "currency": "TWD"],
            "tapPayPrime": "prime_sandbox_" + Hex.encode(SecureRandom.bytes(count: 8)), "storeCredential": ["usage": "recurring"],
        ]
        let codes = try Self.outcomes(setup, [
            .job(try PaymentJob.decode(Array(try JSONSerialization.data(withJSONObject: storing))), publishedAt: Date()),
            try Self.mit("tp-mit", merchant: SandboxEnvironment.tapPayMerchantId, credentialId: CredentialID.generate(), reason: .recurring),
        ], on: database)
        #expect(codes == ["tp-store": "failed credential_not_supported", "tp-mit": "failed credential_not_supported"])
        let reason = try database.query("SELECT error_message FROM payments WHERE job_id = 'tp-store'")[0].decode("error_message", as: String.self)
        #expect(reason.contains("cannot store credentials"), "refused for the capability, not for this release: \(reason)")
    }
}
}
