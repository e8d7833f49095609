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
}
