import Foundation
import JSON
import PaymentStages
import Pipeline
import Testing

extension Integration {
    /// `paypipe credential unlink` through the built binary: Apple's unlink API over mutual TLS (the simulator) with the
    /// identity from PAYPIPE_APPLE_IDENTITY_DIRECTORY, then unlinked once; a repeat says so and calls nobody; without an
    /// identity Apple cannot be told and the credential stays active (exit 69); strict arguments.
    @Suite struct CredentialUnlinkCLITests {
        @Test func unlinkTellsAppleThenUnlinksOnceAndARepeatSaysSo() throws {
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            try harness.applyMerchant(webhookURL: nil)
            let payment = try harness.insertPayment()
            let database = try harness.database()
            defer { database.close() }
            let store = CredentialStore(vault: harness.vault)
            let credential = try store.create(CredentialStore.NewCredential(
                merchantId: "m-notify", paymentId: payment.paymentId, connector: "opp", usage: .recurring, tokenType: .merchant,
                network: "Visa", last4: "4242", expiry: CardExpiry(year: 2031, month: 3), merchantTokenIdentifier: "DNITHE000000000000000077",
                cardMetadata: nil, secrets: CredentialSecrets(references: ["registrationId": "8ac7a4a1secretregistration"])), on: database)
            let (files, simulator) = try MerchantTokenPullTests.appleAPI()
            defer { simulator.stop(); files.remove() }
            simulator.addToken(merchantId: "merchant.com.example", identifier: "DNITHE000000000000000077")
            let identities = files.directory.appendingPathComponent("identities")
            let merchant = identities.appendingPathComponent("m-notify")
            try FileManager.default.createDirectory(at: merchant, withIntermediateDirectories: true)
            try Data("merchant.com.example\n".utf8).write(to: merchant.appendingPathComponent("merchant-identifier"))
            try FileManager.default.copyItem(atPath: files.clientCertificate, toPath: merchant.appendingPathComponent("identity.cert.pem").path)
            try FileManager.default.copyItem(atPath: files.clientKey, toPath: merchant.appendingPathComponent("identity.key.pem").path)
            func paypipe(_ arguments: [String], identities directory: String) throws -> ChildProcess.Output {
                try ChildProcess.runCapturingOutput(PipelineProcesses.binary("paypipe"), ["credential"] + arguments, environment: [
                    "PAYPIPE_ENV": "sandbox", "PAYPIPE_DATABASE_URL": harness.databaseURL, "PAYPIPE_APPLE_IDENTITY_DIRECTORY": directory,
                    "PAYPIPE_APPLE_TOKEN_API_URL": simulator.baseURL, "PAYPIPE_APPLE_TOKEN_API_CA_FILE": files.caCertificate,
                ])
            }
            let unlink = ["unlink", credential.id, "--merchant", "m-notify", "--json"]

            let noIdentity = try paypipe(unlink, identities: files.directory.appendingPathComponent("none").path)
            #expect(noIdentity.status == 69, "\(noIdentity.text)")
            #expect(try store.find(credential.id, merchantId: "m-notify", on: database)?.state == .active)

            let done = try paypipe(unlink, identities: identities.path)
            #expect(done.status == 0, "\(done.text)")
            #expect(try JSONValue.parse(done.text.trimmingCharacters(in: .whitespacesAndNewlines))["outcome"]?.stringValue == "unlinked")
            #expect(simulator.isUnlinked(merchantId: "merchant.com.example", identifier: "DNITHE000000000000000077"))
            #expect(try store.find(credential.id, merchantId: "m-notify", on: database)?.state == .unlinked)

            let again = try paypipe(["unlink", credential.id, "--merchant", "m-notify"], identities: identities.path)
            #expect(again.status == 0 && again.text.contains("was already unlinked: nothing done"), "\(again.text)")
            #expect(simulator.calls.count == 1)

            #expect(try paypipe(["unlink", "cred_000000000000000000000000", "--merchant", "m-notify"], identities: identities.path).status == 65)
            for bad in [["unlink", "--merchant", "m-notify"], ["unlink", credential.id], ["unlink", credential.id, "--merchant", "m-notify", "--force"]] {
                #expect(try paypipe(bad, identities: identities.path).status == 64, "\(bad)")
            }
        }
    }
}
