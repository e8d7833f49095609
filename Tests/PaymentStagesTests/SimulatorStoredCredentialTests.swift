import JWT
@testable import PaymentStages
import Pipeline
@testable import PayPipeDevTools
import Testing

/// The simulator's Trust Payments face checks stored-credential fields as docs/recurring.md describes: a child AUTH
/// needs a recorded successful parent and may omit card data; `credentialsonfile`, `initiationreason` and `RECUR` are
/// validated.
@Suite struct SimulatorStoredCredentialTests {
    static func code(_ reply: SimulatorReply) -> (code: String?, field: String?) {
        let item = reply.items.last
        return (item?["errorcode"]?.stringValue, item?["errordata"]?[0]?.stringValue)
    }

    @Test func aChildAuthNeedsASuccessfulParentAndValidStoredCredentialFields() throws {
        let engine = SimulatorEngine(ledger: SimulatorLedger(), slowResponseSeconds: 0)
        var first = GatewaySimulatorEngineTests.fields(amount: 1000, order: "SUB-1")
        first.set("1", forKey: "credentialsonfile")
        let stored = engine.handle(requestTypes: ["AUTH"], fields: first)
        #expect(Self.code(stored).code == "0")
        let parent = try #require(stored.items.last?["transactionreference"]?.stringValue)
        var declined = GatewaySimulatorEngineTests.fields(amount: 1051, order: "SUB-X")
        declined.set("1", forKey: "credentialsonfile")
        let declinedParent = try #require(engine.handle(requestTypes: ["AUTH"], fields: declined).items.last?["transactionreference"]?.stringValue)

        func child(_ order: String, parent: String?, _ changes: [(String, JSONValue)] = []) -> (code: String?, field: String?) {
            var fields = GatewaySimulatorEngineTests.fields(amount: 1000, order: order, pan: nil)
            fields.set("RECUR", forKey: "accounttypedescription")
            fields.set("2", forKey: "credentialsonfile")
            if let parent { fields.set(.string(parent), forKey: "parenttransactionreference") }
            for (key, value) in changes { fields.set(value, forKey: key) }
            return Self.code(engine.handle(requestTypes: ["AUTH"], fields: fields))
        }
        #expect(child("SUB-2", parent: parent).code == "0", "a recurring child AUTH without card data")
        #expect(child("SUB-3", parent: parent, [("accounttypedescription", "ECOM"), ("initiationreason", "C")]).code == "0")
        #expect(child("SUB-4", parent: "59-9-404").field == "parenttransactionreference", "unknown parent")
        #expect(child("SUB-5", parent: declinedParent).field == "parenttransactionreference", "declined parent")
        #expect(child("SUB-6", parent: nil).field == "accounttypedescription", "RECUR without a parent")
        #expect(child("SUB-7", parent: parent, [("credentialsonfile", "3")]).field == "credentialsonfile")
        #expect(child("SUB-8", parent: parent, [("initiationreason", "Z")]).field == "initiationreason")
        #expect(child("SUB-9", parent: nil, [("accounttypedescription", "ECOM"), ("pan", "4111111111111111")]).field == "parenttransactionreference",
                "credentialsonfile 2 needs a parent")
    }
}

/// The simulator's OPP face checks the standing-instruction parameters as docs/recurring.md describes, with the
/// connector's own mapping (OPPStoredCredentials) producing only accepted combinations.
@Suite struct OPPSimulatorStoredCredentialTests {
    static let base: [String: String] = [
        "paymentType": "DB", "currency": "EUR", "amount": "9.99", "paymentBrand": "APPLEPAY", "merchantTransactionId": "SUB42-0001-a1",
        "applePay.paymentToken": #"{"header":{}}"#,
    ]

    static func invalid(_ extra: [(String, String)]) -> String? {
        OPPSimulatorFace.invalidParameter(base.merging(extra) { $1 })
    }

    @Test func theConnectorsParametersPassAndBrokenOnesAreNamed() {
        for usage in CredentialUsage.allCases {
            #expect(Self.invalid(OPPStoredCredentials.initialParameters(usage)) == nil, "\(usage)")
            for reason in MITReason.allCases {
                #expect(Self.invalid(OPPStoredCredentials.merchantInitiatedParameters(reason, usage: usage, initialTransactionId: "T1")) == nil, "\(reason)")
            }
        }
        let initial = OPPStoredCredentials.initialParameters(.recurring)
        #expect(Self.invalid(initial + [("standingInstruction.source", "MIT")]) == "standingInstruction.source")
        #expect(Self.invalid(initial + [("standingInstruction.type", "WEEKLY")]) == "standingInstruction.type")
        #expect(Self.invalid(OPPStoredCredentials.initialParameters(.unscheduled) + [("standingInstruction.recurringType", "SUBSCRIPTION")])
                == "standingInstruction.recurringType")
        #expect(Self.invalid([("createRegistration", "yes")]) == "createRegistration")
        let repeated = OPPStoredCredentials.merchantInitiatedParameters(.recurring, usage: .recurring, initialTransactionId: "")
        #expect(Self.invalid(repeated) == "standingInstruction.initialTransactionId")
        #expect(Self.invalid(repeated.map { $0.0 == "standingInstruction.initialTransactionId" ? ($0.0, "T1") : $0 } + [("createRegistration", "true")])
                == "createRegistration")
    }
}
