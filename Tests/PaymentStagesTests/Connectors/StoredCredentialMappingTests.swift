import Foundation
@testable import PaymentStages
import Pipeline
import Testing

/// Each connector's stored-credential declaration and its mapping of the job's usage and `mitReason` to the
/// processor's fields (docs/recurring.md), kept in the connector's folder.
@Suite struct StoredCredentialMappingTests {
    static func dictionary(_ fields: [(String, String)]?) -> [String: String]? {
        fields.map { Dictionary(uniqueKeysWithValues: $0) }
    }

    @Test func trustPaymentsAndOPPStoreCredentialsAndTapPayDoesNot() {
        #expect(ConnectorKind.trustPayments.storedCredentials != nil)
        #expect(ConnectorKind.opp.storedCredentials != nil)
        #expect(ConnectorKind.tapPay.storedCredentials == nil, "TapPay's remember is not available for Apple Pay")
        for kind in ConnectorKind.allCases { #expect(kind.storedCredentials?.needsNetworkToken != true, "\(kind)") }
    }

    @Test func trustPaymentsMapsEachReasonToItsFields() {
        #expect(Self.dictionary(TrustPaymentsStoredCredentials.initialFields(.recurring)) == ["credentialsonfile": "1"])
        let parent = "59-9-1"
        #expect(Self.dictionary(TrustPaymentsStoredCredentials.merchantInitiatedFields(.recurring, parentTransactionReference: parent)) == [
            "parenttransactionreference": parent, "credentialsonfile": "2", "accounttypedescription": "RECUR", "subscriptiontype": "RECURRING"])
        for (reason, letter) in [(MITReason.unscheduled, "C"), (.reauthorization, "A"), (.delayedCharge, "D")] {
            let fields = Self.dictionary(TrustPaymentsStoredCredentials.merchantInitiatedFields(reason, parentTransactionReference: parent))
            #expect(fields?["initiationreason"] == letter && fields?["parenttransactionreference"] == parent, "\(reason)")
        }
        #expect(TrustPaymentsStoredCredentials.merchantInitiatedFields(.resubmission, parentTransactionReference: parent) == nil)
        // The declaration offers exactly the reasons the mapping has codes for.
        let mapped = Set(MITReason.allCases.filter { TrustPaymentsStoredCredentials.merchantInitiatedFields($0, parentTransactionReference: parent) != nil })
        #expect(mapped == TrustPaymentsStoredCredentials.support.mitReasons)
    }

    @Test func oppMapsUsagesAndReasonsToStandingInstructions() {
        #expect(Self.dictionary(OPPStoredCredentials.initialParameters(.recurring)) == [
            "createRegistration": "true", "standingInstruction.mode": "INITIAL", "standingInstruction.type": "RECURRING",
            "standingInstruction.source": "CIT", "standingInstruction.recurringType": "SUBSCRIPTION"])
        #expect(Self.dictionary(OPPStoredCredentials.initialParameters(.installment))?["standingInstruction.type"] == "INSTALLMENT")
        for reason in MITReason.allCases {
            let parameters = Self.dictionary(OPPStoredCredentials.merchantInitiatedParameters(reason, usage: .recurring, initialTransactionId: "T1"))
            #expect(parameters?["standingInstruction.mode"] == "REPEATED" && parameters?["standingInstruction.source"] == "MIT", "\(reason)")
            #expect(parameters?["standingInstruction.initialTransactionId"] == "T1", "\(reason)")
            let expected = switch reason {
            case .recurring: "RECURRING"
            case .installment: "INSTALLMENT"
            default: "UNSCHEDULED"
            }
            #expect(parameters?["standingInstruction.type"] == expected, "\(reason)")
        }
        #expect(OPPStoredCredentials.merchantInitiatedPath(registrationId: "8ac7") == "/v1/registrations/8ac7/payments")
    }

    // MARK: The built requests

    static func payment(_ intent: StoredCredentialIntent?) -> GatewayPaymentDetails {
        var payment = OPPConnectorTests.payment
        payment.storedCredential = intent
        return payment
    }

    static func payload(_ request: GatewayRequest) -> [String: String] {
        var fields: [String: String] = [:]
        for entry in request.claims["payload"]?.objectValue ?? [] {
            fields[entry.key] = entry.value.stringValue ?? entry.value.serializedString
        }
        return fields
    }

    @Test func trustPaymentsStoringAuthAddsCredentialsOnFileToTheWalletAuth() throws {
        let plain = try AuthorizeClaimsTests.build(payment: Self.payment(nil))
        let storing = try AuthorizeClaimsTests.build(payment: Self.payment(.store(.recurring)))
        var expected = Self.payload(plain)
        #expect(expected["credentialsonfile"] == nil)
        expected["credentialsonfile"] = "1"
        #expect(Self.payload(storing) == expected, "the same wallet AUTH, plus credentialsonfile 1")
        #expect(TrustPaymentsClient.storesCredential(storing) && !TrustPaymentsClient.storesCredential(plain), "submit reads only for storing requests")
    }

    @Test func trustPaymentsMerchantInitiatedAuthIsAChildOfTheStoredParentWithoutCardData() throws {
        let parent = "59-9-123456"
        // No stored card data at all: an MIT has none, and a 3-D Secure merchant still sends AUTH alone.
        let request = try AuthorizeClaimsTests.build(
            gateway: AuthorizeClaimsTests.gateway(requestTypes: ["THREEDQUERY", "AUTH"]),
            payment: Self.payment(.charge(.recurring, usage: .recurring, references: [TrustPaymentsStoredCredentials.parentReference: parent])),
            data: nil)
        #expect(request.requestTypes == ["AUTH"])
        #expect(Self.payload(request) == [
            "sitereference": "test_site12345", "currencyiso3a": "GBP", "baseamount": "1050", "orderreference": "ORDER-0001",
            "requesttypedescriptions": #"["AUTH"]"#, "parenttransactionreference": parent, "credentialsonfile": "2",
            "accounttypedescription": "RECUR", "subscriptiontype": "RECURRING",
        ])
        let unscheduled = try AuthorizeClaimsTests.build(
            payment: Self.payment(.charge(.unscheduled, usage: .unscheduled, references: [TrustPaymentsStoredCredentials.parentReference: parent])), data: nil)
        #expect(Self.payload(unscheduled)["initiationreason"] == "C" && Self.payload(unscheduled)["accounttypedescription"] == "ECOM")
        #expect(!"\(Self.payment(.charge(.recurring, usage: .recurring, references: ["parentTransactionReference": parent])))".contains(parent),
                "the references never show in a description")
        #expect(throws: AuthorizeError.self) {
            try AuthorizeClaimsTests.build(payment: Self.payment(.charge(.recurring, usage: .recurring, references: [:])), data: nil)
        }
        #expect(throws: AuthorizeError.self) {
            try AuthorizeClaimsTests.build(
                payment: Self.payment(.charge(.resubmission, usage: .recurring, references: [TrustPaymentsStoredCredentials.parentReference: parent])), data: nil)
        }
    }

    @Test func oppStoringPaymentAddsRegistrationAndTheInitialStandingInstruction() throws {
        let settings = OPPSettings(entityId: "entity1")
        let data = AuthorizeClaimsTests.stored(card: nil, walletToken: AuthorizeClaimsTests.walletToken)
        let request = try OPPWire.authorizationRequest(settings: settings, mode: .gatewayDecrypts, payment: Self.payment(.store(.installment)), data: data)
        let form = OPPWire.paymentForm(request, entityId: "entity1", reference: "REF-00000001")
        #expect(form.map(\.key) == ["entityId", "amount", "currency", "paymentType", "paymentBrand", "applePay.paymentToken", "createRegistration",
                                    "standingInstruction.mode", "standingInstruction.type", "standingInstruction.source", "merchantTransactionId"])
        #expect(Self.payload(request)["standingInstruction.type"] == "INSTALLMENT")
        #expect(request.claims[OPPStoredCredentials.pathKey] == nil, "a storing payment goes to /v1/payments")
        #expect(OPPConnector.storesCredential(request))
        #expect(!OPPConnector.storesCredential(try OPPWire.authorizationRequest(settings: settings, mode: .gatewayDecrypts, payment: Self.payment(nil), data: data)))
    }

    @Test func oppMerchantInitiatedPaymentGoesToTheRegistrationWithoutBrandOrCard() throws {
        let references = [OPPStoredCredentials.registrationId: "8ac7a4a08f6a4d6b018f6b2a1c3d4e5f", OPPStoredCredentials.initialTransactionId: "T-0001"]
        let request = try OPPWire.authorizationRequest(
            settings: OPPSettings(entityId: "entity1", paymentType: "PA"), mode: .merchantDecrypts,
            payment: Self.payment(.charge(.recurring, usage: .recurring, references: references)), data: nil)
        #expect(request.claims[OPPStoredCredentials.pathKey]?.stringValue == "/v1/registrations/8ac7a4a08f6a4d6b018f6b2a1c3d4e5f/payments")
        let form = OPPWire.paymentForm(request, entityId: "entity1", reference: "REF-00000001")
        #expect(form.map(\.key) == ["entityId", "amount", "currency", "paymentType", "standingInstruction.mode", "standingInstruction.type",
                                    "standingInstruction.source", "standingInstruction.initialTransactionId", "standingInstruction.recurringType",
                                    "merchantTransactionId"])
        #expect(form.map(\.value) == ["entity1", "10.50", "GBP", "PA", "REPEATED", "RECURRING", "MIT", "T-0001", "SUBSCRIPTION", "REF-00000001"])
        #expect(!"\(request)".contains("8ac7a4a08f6a4d6b018f6b2a1c3d4e5f"), "the registration id is masked in descriptions")
        for bad in [[OPPStoredCredentials.initialTransactionId: "T-0001"], [OPPStoredCredentials.registrationId: "../x", OPPStoredCredentials.initialTransactionId: "T"]] {
            #expect(throws: ConnectorBuildError.self) {
                try OPPWire.authorizationRequest(settings: OPPSettings(entityId: "entity1"), mode: .gatewayDecrypts,
                                                 payment: Self.payment(.charge(.unscheduled, usage: .unscheduled, references: bad)), data: nil)
            }
        }
    }
}
