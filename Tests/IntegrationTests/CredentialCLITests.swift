import Foundation
import JSON
import PaymentStages
import Pipeline
import Testing

extension Integration {
/// `paypipe credential list|show` through the built binary on the real database: the merchant's credentials only, in
/// clear what the table holds in clear, never the sealed references; strict arguments.
@Suite struct CredentialCLITests {
    @Test func listAndShowAMerchantsCredentialsWithoutTheirSecrets() throws {
        let harness = try NotifyHarness()
        defer { harness.tearDown() }
        try harness.applyMerchant(webhookURL: nil)
        try harness.applyMerchant("m-other", webhookURL: nil)
        let payment = try harness.insertPayment()
        let database = try harness.database()
        defer { database.close() }
        let store = CredentialStore(vault: harness.vault)
        let credential = try store.create(CredentialStore.NewCredential(
            merchantId: "m-notify", paymentId: payment.paymentId, connector: "opp", usage: .installment, tokenType: .merchant,
            network: "Visa", last4: "4242", expiry: CardExpiry(year: 2031, month: 3), merchantTokenIdentifier: "DNITHE000000000000000077",
            cardMetadata: nil, secrets: CredentialSecrets(references: ["registrationId": "8ac7a4a1secretregistration"])), on: database)

        let list = try harness.paypipe(["credential", "list", "--merchant", "m-notify", "--json"])
        #expect(list.status == 0, "\(list.text)")
        let line = try JSONValue.parse(list.text.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(line["id"]?.stringValue == credential.id && line["usage"]?.stringValue == "installment" && line["expiry"]?.stringValue == "2031-03")
        let table = try harness.paypipe(["credential", "list", "--merchant", "m-notify", "--state", "active"])
        #expect(table.status == 0 && table.text.contains(credential.id) && table.text.contains("4242"), "\(table.text)")
        #expect(try harness.paypipe(["credential", "list", "--merchant", "m-notify", "--state", "unlinked"]).text.contains(credential.id) == false)

        let show = try harness.paypipe(["credential", "show", credential.id, "--merchant", "m-notify"])
        #expect(show.status == 0, "\(show.text)")
        let shown = try JSONValue.parse(show.text.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(shown["merchantTokenIdentifier"]?.stringValue == "DNITHE000000000000000077" && shown["secretsShredded"] == .bool(false))
        for output in [list.text, table.text, show.text] { #expect(!output.contains("secretregistration")) }

        let other = try harness.paypipe(["credential", "show", credential.id, "--merchant", "m-other"])
        #expect(other.status == 65, "another merchant's credential reads as missing: \(other.text)")
        for bad in [["credential", "list"], ["credential", "list", "--merchant", "m-notify", "--state", "gone"],
                    ["credential", "list", "--merchant", "m-notify", "--limit", "0"], ["credential", "show", "--merchant", "m-notify"]] {
            #expect(try harness.paypipe(bad).status == 64, "\(bad)")
        }
    }
}
}
