import Foundation
import PaymentDomain
import Testing

/// Issue #44's refusals before any gateway call, as pure decisions: each code, and the order the checks run in.
@Suite struct CredentialCheckTests {
    static let support = StoredCredentialSupport(usages: [.recurring, .unscheduled], mitReasons: [.recurring, .unscheduled, .reauthorization], needsNetworkToken: false)
    static let now = Date(timeIntervalSince1970: 1_800_000_000)   // 2027-01-15
    static let id = "cred_0123456789abcdef01234567"

    static func stored(merchant: String = "m1", connector: String = "trustpayments", usage: CredentialUsage = .recurring,
                       state: CredentialState = .active, expiry: CardExpiry? = CardExpiry(year: 2030, month: 12)) -> CredentialCheck.Stored {
        CredentialCheck.Stored(merchantId: merchant, connector: connector, usage: usage, state: state, expiry: expiry)
    }

    static func charge(_ reason: MITReason = .recurring, _ stored: CredentialCheck.Stored?, support: StoredCredentialSupport? = support) -> String? {
        CredentialCheck.charge(merchantId: "m1", credentialId: id, reason: reason, stored: stored, connector: "trustpayments",
                               support: support, now: now)?.code
    }

    @Test func aChargeOfAnActiveCredentialForItsUsagePasses() {
        #expect(Self.charge(.recurring, Self.stored()) == nil)
        #expect(Self.charge(.unscheduled, Self.stored(usage: .unscheduled)) == nil)
        #expect(Self.charge(.reauthorization, Self.stored(usage: .unscheduled)) == nil, "industry practice fits any usage")
    }

    @Test func eachRefusalHasItsCode() {
        #expect(Self.charge(.recurring, nil) == "credential_unknown")
        #expect(Self.charge(.recurring, Self.stored(merchant: "m2")) == "credential_unknown", "another merchant's reads as missing")
        #expect(Self.charge(.recurring, Self.stored(state: .unlinked)) == "credential_unlinked")
        #expect(Self.charge(.recurring, Self.stored(state: .expired)) == "credential_expired")
        #expect(Self.charge(.recurring, Self.stored(expiry: CardExpiry(year: 2026, month: 12))) == "credential_expired", "the month has passed")
        #expect(Self.charge(.recurring, Self.stored(expiry: CardExpiry(year: 2027, month: 1))) == nil, "valid through its month")
        #expect(Self.charge(.recurring, Self.stored(), support: nil) == "credential_not_supported")
        #expect(Self.charge(.recurring, Self.stored(connector: "opp")) == "credential_not_supported", "stored through another connector")
        #expect(Self.charge(.delayedCharge, Self.stored()) == "credential_not_supported", "no processor code for the reason")
        #expect(Self.charge(.recurring, Self.stored(usage: .unscheduled)) == "credential_usage_mismatch")
        #expect(Self.charge(.installment, Self.stored()) == "credential_usage_mismatch")
    }

    @Test func theChecksRunInTheirOrder() {
        // No capability: refused before the credential is even looked at.
        #expect(Self.charge(.recurring, nil, support: nil) == "credential_not_supported")
        // Another merchant's unlinked credential: unknown, never revealing its state.
        #expect(Self.charge(.recurring, Self.stored(merchant: "m2", state: .unlinked)) == "credential_unknown")
        // Unlinked wins over expired and over a usage mismatch.
        #expect(Self.charge(.installment, Self.stored(state: .unlinked, expiry: CardExpiry(year: 2020, month: 1))) == "credential_unlinked")
        #expect(Self.charge(.installment, Self.stored(expiry: CardExpiry(year: 2020, month: 1))) == "credential_expired")
    }

    @Test func storingNeedsTheCapabilityForTheUsage() {
        #expect(CredentialCheck.store(.recurring, connector: "tappay", support: nil)?.code == "credential_not_supported")
        #expect(CredentialCheck.store(.installment, connector: "trustpayments", support: Self.support)?.code == "credential_not_supported")
        #expect(CredentialCheck.store(.recurring, connector: "trustpayments", support: Self.support) == nil)
    }

    @Test func everyReasonNamesItsRequiredUsage() {
        #expect(MITReason(rawValue: "delayed_charge") == .delayedCharge)
        #expect(MITReason.allCases.map(\.rawValue).sorted() == ["delayed_charge", "installment", "reauthorization", "recurring", "resubmission", "unscheduled"])
        #expect(MITReason.allCases.filter { $0.requiredUsage == nil } == [.reauthorization, .resubmission, .delayedCharge])
    }
}
