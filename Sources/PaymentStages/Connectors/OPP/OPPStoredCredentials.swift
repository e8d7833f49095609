import Pipeline

/// OPP's stored credentials (docs/recurring.md, "OPP"): the first payment carries `createRegistration=true` and
/// `standingInstruction` `INITIAL`/`CIT`; a later MIT is `POST /v1/registrations/{registrationId}/payments` with
/// `REPEATED`/`MIT` and the `initialTransactionId` of the first [doc, reseller: developer.peachpayments.com
/// oppwa-guides-card-on-file; developers.primeiropay.com repeated-payment]. The registration holds the card, so no
/// network token is kept.
enum OPPStoredCredentials {
    /// The credential references' names in ``CredentialSecrets/references``.
    static let registrationId = "registrationId"
    static let initialTransactionId = "initialTransactionId"

    static let support = StoredCredentialSupport(
        usages: [.recurring, .unscheduled, .installment], mitReasons: Set(MITReason.allCases), needsNetworkToken: false)

    /// `standingInstruction.type` per usage: `UNSCHEDULED`, `RECURRING`, `INSTALLMENT` [doc, reseller: Peach support
    /// article 47001238374].
    static func type(_ usage: CredentialUsage) -> String {
        switch usage {
        case .recurring: "RECURRING"
        case .unscheduled: "UNSCHEDULED"
        case .installment: "INSTALLMENT"
        }
    }

    /// The parameters a storing (customer-initiated) payment adds. `recurringType=SUBSCRIPTION` goes "on top of"
    /// `type=RECURRING` [doc, reseller: Peach article 47001209008].
    static func initialParameters(_ usage: CredentialUsage) -> [(String, String)] {
        var parameters = [("createRegistration", "true"), ("standingInstruction.mode", "INITIAL"),
                          ("standingInstruction.type", type(usage)), ("standingInstruction.source", "CIT")]
        if usage == .recurring { parameters.append(("standingInstruction.recurringType", "SUBSCRIPTION")) }
        return parameters
    }

    /// The parameters of a merchant-initiated payment for `reason` on a credential stored for `usage`. The
    /// industry-practice reasons (reauthorization, resubmission, delayed charge) are sent as `UNSCHEDULED`: no OPP
    /// parameter of their own was found [UNCONFIRMED].
    static func merchantInitiatedParameters(_ reason: MITReason, usage: CredentialUsage, initialTransactionId: String) -> [(String, String)] {
        let type = switch reason {
        case .recurring: type(.recurring)
        case .installment: type(.installment)
        case .unscheduled, .reauthorization, .resubmission, .delayedCharge: type(.unscheduled)
        }
        var parameters = [("standingInstruction.mode", "REPEATED"), ("standingInstruction.type", type),
                          ("standingInstruction.source", "MIT"), ("standingInstruction.initialTransactionId", initialTransactionId)]
        if reason == .recurring { parameters.append(("standingInstruction.recurringType", "SUBSCRIPTION")) }
        return parameters
    }

    /// The path of a merchant-initiated payment: the registration's payments.
    static func merchantInitiatedPath(registrationId: String) -> String { "/v1/registrations/\(registrationId)/payments" }
}

extension OPPConnector {
    public static var storedCredentials: StoredCredentialSupport? { OPPStoredCredentials.support }
}
