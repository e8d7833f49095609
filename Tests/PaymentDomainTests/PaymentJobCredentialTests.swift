import Foundation
import Testing
@testable import PaymentDomain

/// The job's stored-credential members (docs/recurring.md), decoded strictly: a CIT's `storeCredential`, an MIT's
/// `initiator`, `credentialId` and `mitReason` with no token, and every mix the contract refuses as `invalid_job`.
@Suite struct PaymentJobCredentialTests {
    static let id = "cred_0123456789abcdef01234567"
    static var mit: [String: Any?] { ["applePayToken": nil, "initiator": "merchant", "credentialId": id, "mitReason": "delayed_charge"] }

    static func reason(_ overrides: [String: Any?]) -> String? {
        do {
            _ = try PaymentJob.decode(PaymentJobTests.body(overrides))
            return nil
        } catch {
            guard case .invalid(_, _, _, let reason) = error else { return "unaddressed" }
            return reason
        }
    }

    @Test func aStoringJobAndAMerchantInitiatedJobDecode() throws {
        let cit = try PaymentJob.decode(PaymentJobTests.body(["storeCredential": ["usage": "installment"], "initiator": "customer"]))
        #expect(cit.storeCredential == .installment && cit.merchantInitiated == nil && !cit.applePayToken.isEmpty)
        let mit = try PaymentJob.decode(PaymentJobTests.body(Self.mit))
        #expect(mit.merchantInitiated == PaymentJob.MerchantInitiated(credentialId: Self.id, reason: .delayedCharge))
        #expect(mit.applePayToken.isEmpty && mit.tapPayPrime == nil && mit.storeCredential == nil)
        let plain = try PaymentJob.decode(PaymentJobTests.body(["storeCredential": NSNull(), "initiator": NSNull()]))
        #expect(plain.storeCredential == nil && plain.merchantInitiated == nil, "null reads as absent")
    }

    @Test func theContractsMixesAreRefused() {
        var withToken = Self.mit
        withToken["applePayToken"] = ["paymentData": [:]]
        var withPrime = Self.mit
        withPrime["tapPayPrime"] = "prime"
        var storing = Self.mit
        storing["storeCredential"] = ["usage": "recurring"]
        var badId = Self.mit
        badId["credentialId"] = "cred_XYZ"
        var badReason = Self.mit
        badReason["mitReason"] = "no_show"
        var noReason = Self.mit
        noReason["mitReason"] = nil
        let cases: [(String, [String: Any?])] = [
            ("token next to an MIT", withToken), ("prime next to an MIT", withPrime), ("an MIT storing", storing),
            ("a malformed credential id", badId), ("an unknown reason", badReason), ("an MIT without reason", noReason),
            ("credentialId without initiator merchant", ["credentialId": Self.id, "mitReason": "recurring"]),
            ("an unknown initiator", ["initiator": "robot"]),
            ("an unknown usage", ["storeCredential": ["usage": "forever"]]),
            ("an extra member", ["storeCredential": ["usage": "recurring", "frequency": "monthly"]]),
            ("a bare string", ["storeCredential": "recurring"]),
        ]
        for (name, overrides) in cases {
            #expect(Self.reason(overrides) != nil, "\(name) was accepted")
        }
    }

    @Test func theNewMembersCountInTheContentHashOnlyWhenPresent() throws {
        let plain = try PaymentJob.decode(PaymentJobTests.body())
        let storing = try PaymentJob.decode(PaymentJobTests.body(["storeCredential": ["usage": "recurring"]]))
        #expect(plain.contentHash != storing.contentHash)
        let stored = try PaymentJob.decode(PaymentJobTests.body(["storeCredential": ["usage": "unscheduled"]]))
        #expect(stored.contentHash != storing.contentHash)
    }
}
