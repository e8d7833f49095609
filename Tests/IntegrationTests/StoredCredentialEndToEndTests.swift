import ApplePay
import Foundation
import HTTP
import JSON
@testable import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

extension Integration {
/// Issue #44 items 2–3 on the real database and the simulator's faces, on Trust Payments and on OPP: a storing payment
/// (CIT) through the real authorize and submit stages records its credential (active, its processor references sealed,
/// in `payment.authorized`); two merchant-initiated payments (MIT) charge it with the processor's stored-credential
/// fields (a child AUTH of the parent; a repeated payment on the OPP registration); a lost answer of an MIT is
/// reconciled with exactly one authorisation at the processor.
@Suite struct StoredCredentialEndToEndTests {
    /// The connectors' end-to-end harness (its Trust Payments merchant `tp-m`, OPP merchant `opp-m`, the simulator and
    /// the real submit stage), with payments as decrypt leaves storing and merchant-initiated ones.
    typealias Harness = ConnectorEndToEndTests.Harness
}
}

extension Integration.ConnectorEndToEndTests.Harness {
    /// A storing payment as decrypt leaves it for a merchant token: card data, `store_credential`, the token's type,
    /// identifier and metadata.
    func storing(_ merchant: String, amount: Int64, usage: CredentialUsage) throws -> StageMessage {
        let data = StoredPaymentData(decrypted: DecryptedPaymentDataFixture.card(amount: amount), walletToken: nil, paymentMethodDisplayName: "Visa 4242",
                                     paymentMethodNetwork: "Visa", billingContact: nil, shippingContact: nil)
        let message = try authorize.insertPayment(merchantId: merchant, amount: amount, currency: "GBP", orderReference: "CIT-\(amount)", data: data)
        try update(message, """
            store_credential = '\(usage.rawValue)', token_type = 'merchant', merchant_token_identifier = 'DNITHE000000000000000001',
            merchant_token_metadata = '{"cardMetadata":{"expirationDate":"122030","fpanSuffix":"4242"}}'::jsonb
            """)
        return message
    }

    /// A merchant-initiated payment as decrypt leaves it: no card data (only the job's contacts), its credential and reason.
    func merchantInitiated(_ merchant: String, amount: Int64, credentialId: String, reason: MITReason) throws -> StageMessage {
        let contacts = StoredPaymentData(decrypted: nil, walletToken: nil, paymentMethodDisplayName: nil, paymentMethodNetwork: nil,
                                         billingContact: nil, shippingContact: nil)
        let message = try authorize.insertPayment(merchantId: merchant, amount: amount, currency: "GBP", orderReference: "MIT-\(amount)", data: contacts)
        try update(message, "credential_id = '\(credentialId)', mit_reason = '\(reason.rawValue)'")
        return message
    }

    private func update(_ message: StageMessage, _ assignments: String) throws {
        let database = try authorize.database()
        defer { database.close() }
        try database.query("UPDATE payments SET \(assignments) WHERE id = $1", [message.paymentId])
    }

    /// Runs the payment through the real authorize stage, then submit once: submit's outcome.
    func pay(_ stage: SubmitStage, _ message: StageMessage) throws -> Result<StageOutcome, StageFailure> {
        let database = try authorize.database()
        defer { database.close() }
        let authorized = authorize.makeStage().process([message], database: database)[0]
        #expect(authorized == .success(.handOff(to: .submit, message)), "authorize hands the payment to submit: \(authorized)")
        return stage.process([message], database: database)[0]
    }

    /// The AUTH records the Trust Payments face holds under the payment's reference (the order reference and its suffix).
    func records(_ prefix: String) -> [JSONValue] {
        simulator.ledger.authCounts().keys.filter { $0.hasPrefix(prefix + ".") || $0 == prefix }.flatMap { simulator.ledger.records(orderReference: $0) }
    }

    /// The credential the payment stored, its sealed bytes, and its secrets opened.
    func credential(of message: StageMessage) throws -> (credential: CredentialStore.Credential, ciphertext: [UInt8], secrets: CredentialSecrets?)? {
        let database = try authorize.database()
        defer { database.close() }
        guard let row = try database.query("SELECT id, ciphertext FROM credentials WHERE payment_id = $1", [message.paymentId]).first else { return nil }
        let store = CredentialStore(vault: authorize.vault)
        guard let credential = try store.find(try row.decode("id", as: String.self), merchantId: message.merchantId, on: database) else { return nil }
        return (credential, try row.decode("ciphertext", as: [UInt8].self), try store.secrets(credential, on: database))
    }

    func event(_ message: StageMessage) throws -> PaymentEvent? {
        let database = try authorize.database()
        defer { database.close() }
        guard let payment = try authorize.payment(message.paymentId) else { return nil }
        return try PaymentEventLoader().load(payment, on: database)?.event
    }

    /// A lost answer of an MIT: uncertain, then reconciled by its own reference with the one AUTH the processor holds.
    func reconcilesLostAnswer(_ stage: SubmitStage, _ message: StageMessage, reference: String) throws {
        let first = try pay(stage, message)
        #expect({ if case .failure(.transient("gateway_outcome_uncertain", _)) = first { true } else { false } }(), "\(first)")
        for _ in 0..<4 where try status(message) != .authorized {
            try ageAttempts(message)
            _ = try process(stage, message)
        }
        #expect(try status(message) == .authorized)
        #expect(auths(reference) == 1, "exactly one AUTH at the processor for the lost MIT")
    }
}

extension Integration.StoredCredentialEndToEndTests {
    /// What every storing payment must show: authorised, one active credential of its merchant with the processor's
    /// references sealed (not readable in the stored bytes) and the token metadata's summary, carried by the event.
    static func expectStored(_ harness: Harness, _ cit: StageMessage, connector: ConnectorKind, references: Set<String>) throws -> CredentialStore.Credential {
        #expect(try harness.status(cit) == .authorized)
        let stored = try #require(try harness.credential(of: cit))
        #expect(stored.credential.state == .active && stored.credential.connector == connector.rawValue && stored.credential.usage == .recurring)
        #expect(stored.credential.merchantId == cit.merchantId && stored.credential.tokenType == .merchant)
        #expect(stored.credential.last4 == "4242" && stored.credential.expiry?.description == "2030-12" && stored.credential.network == "Visa")
        let secrets = try #require(stored.secrets)
        #expect(Set(secrets.references.keys) == references)
        #expect(secrets.networkToken == nil, "no network token is kept")
        for value in secrets.references.values {
            #expect(!String(decoding: stored.ciphertext, as: UTF8.self).contains(value), "sealed, not stored in the clear")
        }
        let event = try #require(try harness.event(cit))
        #expect(event.type == .authorized)
        #expect(event.credential == PaymentEvent.StoredCredentialSummary(
            id: stored.credential.id, usage: .recurring, tokenType: .merchant, network: "Visa", last4: "4242", expiry: "2030-12"))
        #expect(event.json["data"]?["credential"]?["id"]?.stringValue == stored.credential.id)
        return stored.credential
    }

    @Test func trustPaymentsStoresThenChargesChildAuthsAndReconcilesALostOne() throws {
        let harness = try Harness()
        let stage = harness.stage()
        let cit = try harness.storing("tp-m", amount: 1050, usage: .recurring)
        #expect(try harness.pay(stage, cit) == .success(.handOff(to: .notify, cit)))
        let credential = try Self.expectStored(harness, cit, connector: .trustPayments, references: [TrustPaymentsStoredCredentials.parentReference])
        let parent = try #require(harness.records("CIT-1050").first?["transactionreference"]?.stringValue)
        #expect(harness.records("CIT-1050").first?["credentialsonfile"]?.stringValue == "1")
        #expect(try harness.credential(of: cit)?.secrets?.references == [TrustPaymentsStoredCredentials.parentReference: parent])

        for (amount, reason) in [(Int64(1060), MITReason.recurring), (1070, .recurring)] {
            let mit = try harness.merchantInitiated("tp-m", amount: amount, credentialId: credential.id, reason: reason)
            #expect(try harness.pay(stage, mit) == .success(.handOff(to: .notify, mit)))
            #expect(try harness.status(mit) == .authorized)
            let child = try #require(harness.records("MIT-\(amount)").first)
            #expect(child["parenttransactionreference"]?.stringValue == parent, "a child AUTH of the storing one")
            #expect(child["credentialsonfile"]?.stringValue == "2" && child["accounttypedescription"]?.stringValue == "RECUR")
            #expect(child["maskedpan"] == nil, "no card data of its own")
            #expect(try harness.event(mit)?.credential == nil, "only the storing payment's event carries a credential")
        }
        // …96: recorded, answer lost; reconciled by the MIT's own reference.
        let lost = try harness.merchantInitiated("tp-m", amount: 1096, credentialId: credential.id, reason: .unscheduled)
        try harness.reconcilesLostAnswer(stage, lost, reference: "MIT-1096")
        let database = try harness.authorize.database()
        defer { database.close() }
        #expect(try database.query("SELECT count(*) AS n FROM credentials")[0].decode("n", as: Int64.self) == 1, "MITs store nothing")
    }

    @Test func oppStoresARegistrationThenChargesRepeatedPaymentsAndReconcilesALostOne() throws {
        let harness = try Harness()
        let stage = harness.stage()
        let cit = try harness.storing("opp-m", amount: 2050, usage: .recurring)
        #expect(try harness.pay(stage, cit) == .success(.handOff(to: .notify, cit)))
        let credential = try Self.expectStored(
            harness, cit, connector: .opp, references: [OPPStoredCredentials.registrationId, OPPStoredCredentials.initialTransactionId])
        let requests = harness.simulator.ledger.captured
        let storing = try #require(requests.first { $0["form"]?["merchantTransactionId"]?.stringValue?.hasPrefix("CIT-2050") == true })
        #expect(storing["path"]?.stringValue == "/v1/payments")
        #expect(storing["form"]?["createRegistration"]?.stringValue == "true" && storing["form"]?["standingInstruction.mode"]?.stringValue == "INITIAL")
        let references = try #require(try harness.credential(of: cit)?.secrets?.references)
        let registration = try #require(references[OPPStoredCredentials.registrationId])

        for amount: Int64 in [2060, 2070] {
            let mit = try harness.merchantInitiated("opp-m", amount: amount, credentialId: credential.id, reason: .recurring)
            #expect(try harness.pay(stage, mit) == .success(.handOff(to: .notify, mit)))
            #expect(try harness.status(mit) == .authorized)
            let sent = try #require(harness.simulator.ledger.captured.first { $0["form"]?["merchantTransactionId"]?.stringValue?.hasPrefix("MIT-\(amount)") == true })
            #expect(sent["path"]?.stringValue == "/v1/registrations/\(registration)/payments")
            #expect(sent["form"]?["standingInstruction.mode"]?.stringValue == "REPEATED" && sent["form"]?["standingInstruction.source"]?.stringValue == "MIT")
            #expect(sent["form"]?["standingInstruction.initialTransactionId"]?.stringValue == references[OPPStoredCredentials.initialTransactionId])
            #expect(sent["form"]?["card.number"] == nil && sent["form"]?["paymentBrand"] == nil, "the registration holds the card")
        }
        let lost = try harness.merchantInitiated("opp-m", amount: 2096, credentialId: credential.id, reason: .recurring)
        try harness.reconcilesLostAnswer(stage, lost, reference: "MIT-2096")
    }

    /// An MIT whose credential was unlinked after decrypt accepted it is refused in authorize, before any call.
    @Test func anMITWhoseCredentialWasUnlinkedSinceDecryptIsRefusedBeforeAnyCall() throws {
        let harness = try Harness()
        let stage = harness.stage()
        let cit = try harness.storing("tp-m", amount: 3050, usage: .recurring)
        #expect(try harness.pay(stage, cit) == .success(.handOff(to: .notify, cit)))
        let credential = try #require(try harness.credential(of: cit)).credential
        let mit = try harness.merchantInitiated("tp-m", amount: 3060, credentialId: credential.id, reason: .recurring)
        let database = try harness.authorize.database()
        defer { database.close() }
        #expect(try CredentialStore(vault: harness.authorize.vault).markUnlinked(credential.id, merchantId: "tp-m", reason: "USER", on: database) != .notFound)
        let outcome = harness.authorize.makeStage().process([mit], database: database)[0]
        #expect(outcome == .success(.handOff(to: .notify, mit)))
        let failed = try #require(try harness.authorize.payment(mit.paymentId))
        #expect(failed.status == .failed && failed.errorCode == "credential_unlinked")
        #expect(harness.records("MIT-3060").isEmpty && harness.auths("MIT-3060") == 0)
    }

    /// Capture and refund work on an MIT payment as on any other: an OPP pre-authorisation on the registration (a
    /// manual-capture merchant), captured in part and refunded by the real operations stage, one gateway operation each.
    @Test func anOPPMerchantInitiatedPaymentIsCapturedAndRefunded() throws {
        let operations = try Integration.ConnectorOperationsTests.Harness()
        let harness = operations.base
        let stage = harness.stage()
        func manual(_ message: StageMessage) throws -> StageMessage {
            let database = try harness.authorize.database()
            defer { database.close() }
            try PaymentStore().setCapturePolicy(message.paymentId, CapturePolicy(mode: .manual, captureWithin: nil), on: database)
            return message
        }
        let cit = try manual(try harness.storing("opp-ops", amount: 4050, usage: .recurring))
        #expect(try harness.pay(stage, cit) == .success(.handOff(to: .notify, cit)))
        let credential = try #require(try harness.credential(of: cit)).credential
        let mit = try manual(try harness.merchantInitiated("opp-ops", amount: 4000, credentialId: credential.id, reason: .recurring))
        #expect(try harness.pay(stage, mit) == .success(.handOff(to: .notify, mit)))
        let sent = try #require(harness.simulator.ledger.captured.first { $0["form"]?["merchantTransactionId"]?.stringValue?.hasPrefix("MIT-4000") == true })
        #expect(sent["path"]?.stringValue?.hasPrefix("/v1/registrations/") == true && sent["form"]?["paymentType"] == "PA")
        let ops = operations.operations()
        #expect(Integration.ConnectorOperationsTests.published(try operations.run(ops, .capture, "ship", mit, amount: 2500)))
        #expect(Integration.ConnectorOperationsTests.published(try operations.run(ops, .refund, "return", mit, amount: 1000)))
        #expect(try [operations.outcome(mit, "ship"), operations.outcome(mit, "return")] == ["succeeded", "succeeded"])
        #expect(try operations.lifecycle(mit).map { "\($0.status.rawValue) \($0.capturedAmount) \($0.refundedAmount)" } == "partially_refunded 2500 1000")
        #expect(operations.ledger(try operations.processorId(mit)) == ["CP 2500", "RF 1000"])
    }

    /// The same on Trust Payments (its webservices merchant): an MIT (a child AUTH of the storing one) with manual capture (settlestatus 2) is
    /// captured in part, and an automatically captured MIT is refunded in part (before the simulator's settlement: a
    /// lower settled amount), by the real operations stage. Each operation, also when its message comes twice, is
    /// exactly one TRANSACTIONUPDATE on the simulator's operation ledger, under the MIT's own transaction reference.
    @Test func aTrustPaymentsMerchantInitiatedPaymentIsCapturedAndRefundedOnceEach() throws {
        let operations = try Integration.ConnectorOperationsTests.Harness()
        let harness = operations.base
        let stage = harness.stage()
        let cit = try harness.storing("tp-ops", amount: 8050, usage: .recurring)
        #expect(try harness.pay(stage, cit) == .success(.handOff(to: .notify, cit)))
        let credential = try #require(try harness.credential(of: cit)).credential
        let parent = try #require(harness.records("CIT-8050").first?["transactionreference"]?.stringValue)

        let manual = try harness.merchantInitiated("tp-ops", amount: 8000, credentialId: credential.id, reason: .recurring)
        do {
            let database = try harness.authorize.database()
            defer { database.close() }
            try PaymentStore().setCapturePolicy(manual.paymentId, CapturePolicy(mode: .manual, captureWithin: nil), on: database)
        }
        #expect(try harness.pay(stage, manual) == .success(.handOff(to: .notify, manual)))
        let held = try #require(harness.records("MIT-8000").first)
        #expect(held["parenttransactionreference"]?.stringValue == parent && held["settlestatus"]?.stringValue == "2", "a suspended child AUTH")
        #expect(try operations.lifecycle(manual)?.status == .authorized, "nothing captured yet")

        let automatic = try harness.merchantInitiated("tp-ops", amount: 8100, credentialId: credential.id, reason: .unscheduled)
        #expect(try harness.pay(stage, automatic) == .success(.handOff(to: .notify, automatic)))

        let ops = operations.operations()
        for _ in 0..<2 {   // each operation's message twice: the second sends nothing
            let captured = try operations.run(ops, .capture, "mit-ship", manual, amount: 5000)
            let refunded = try operations.run(ops, .refund, "mit-return", automatic, amount: 1100)
            #expect(Integration.ConnectorOperationsTests.published(captured) && Integration.ConnectorOperationsTests.published(refunded), "\(captured) \(refunded)")
        }
        let outcomes = try [operations.outcome(manual, "mit-ship"), operations.outcome(automatic, "mit-return")]
        #expect(outcomes == ["succeeded", "succeeded"], "\(outcomes)")
        #expect(try operations.lifecycle(manual).map { "\($0.status.rawValue) \($0.capturedAmount) \($0.refundedAmount)" } == "captured 5000 0")
        // Refunded before settlement: the settled amount lowered (docs/operations-lifecycle.md).
        let lowered = try operations.lifecycle(automatic).map { "\($0.status.rawValue) \($0.capturedAmount) \($0.refundedAmount)" }
        #expect(lowered == "captured 7000 0", "\(lowered ?? "none")")
        let captured = harness.simulator.ledger.operations.filter { $0["transactionreference"]?.stringValue == (try? operations.processorId(manual)) }
        let refunded = harness.simulator.ledger.operations.filter { $0["transactionreference"]?.stringValue == (try? operations.processorId(automatic)) }
        #expect(captured.map { $0["requesttypedescription"]?.stringValue } == ["TRANSACTIONUPDATE"] && captured.first?["updates"] == ["settlestatus": "0", "settlebaseamount": "5000"],
                "one capture at the simulator: \(captured)")
        #expect(refunded.map { $0["requesttypedescription"]?.stringValue } == ["TRANSACTIONUPDATE"] && refunded.first?["updates"]?["settlebaseamount"] == "7000",
                "one refund at the simulator, before settlement a lower settled amount: \(refunded)")
        #expect(harness.simulator.ledger.operations.count == 2, "nothing else was sent")
    }

    /// A storing payment whose answer was lost is reconciled by its status query with exactly one AUTH at the
    /// processor, and still records its credential, from the adopted record (the simulator's records carry the
    /// references; for OPP that a real query record does is [UNCONFIRMED], docs/recurring.md "Status").
    @Test(arguments: [("tp-m", "CIT-5096"), ("opp-m", "CIT-6096")])
    func aStoringPaymentWithALostAnswerStoresOnceReconciled(_ merchant: String, _ reference: String) throws {
        let harness = try Harness()
        let cit = try harness.storing(merchant, amount: Int64(reference.dropFirst(4))!, usage: .recurring)
        try harness.reconcilesLostAnswer(harness.stage(), cit, reference: reference)
        let stored = try #require(try harness.credential(of: cit))
        #expect(stored.credential.state == .active && stored.secrets?.references.isEmpty == false)
        let database = try harness.authorize.database()
        defer { database.close() }
        #expect(try database.query("SELECT count(*) AS n FROM credentials")[0].decode("n", as: Int64.self) == 1)
    }

    /// Never another merchant's credential: an MIT row that names one (decrypt never links it; written here directly)
    /// finds no credential of its own merchant and fails `credential_unknown` in authorize, before any call.
    @Test func anMITNamingAnotherMerchantsCredentialIsRefusedBeforeAnyCall() throws {
        let harness = try Harness()
        let cit = try harness.storing("tp-m", amount: 7050, usage: .recurring)
        #expect(try harness.pay(harness.stage(), cit) == .success(.handOff(to: .notify, cit)))
        let others = try #require(try harness.credential(of: cit)).credential
        let mit = try harness.merchantInitiated("opp-m", amount: 7060, credentialId: others.id, reason: .recurring)
        let database = try harness.authorize.database()
        defer { database.close() }
        #expect(harness.authorize.makeStage().process([mit], database: database)[0] == .success(.handOff(to: .notify, mit)))
        let failed = try #require(try harness.authorize.payment(mit.paymentId))
        #expect(failed.status == .failed && failed.errorCode == "credential_unknown")
        #expect(harness.simulator.ledger.captured.allSatisfy { $0["form"]?["merchantTransactionId"]?.stringValue?.hasPrefix("MIT-7060") != true })
        #expect(try database.query("SELECT count(*) AS n FROM gateway_requests WHERE payment_id = $1", [mit.paymentId])[0].decode("n", as: Int64.self) == 0)
    }
}
