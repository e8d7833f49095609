import JWT
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

    /// The references a storing payment's answer carries: `registrationId` and `standingInstruction.initialTransactionId`
    /// ("ID received in the response of the initial CIT transaction" [doc, reseller: Peach article 47001238374]; that it
    /// is the answer's `standingInstruction.initialTransactionId` is [secondary]); both or nothing.
    static func references(_ answer: JSONValue) -> [String: String] {
        guard let registration = answer["registrationId"]?.stringValue, !registration.isEmpty, registration.utf8.count <= 64,
              let initial = answer["standingInstruction"]?["initialTransactionId"]?.stringValue, !initial.isEmpty, initial.utf8.count <= 64
        else { return [:] }
        return [registrationId: registration, initialTransactionId: initial]
    }

    /// The stored request's member naming where it is sent (``OPPConnector`` posts a request without it to
    /// `/v1/payments`). It holds the registration id, so it is masked like card data (``OPPConnector/sensitiveKeys``).
    static let pathKey = "registrationPath"

    /// A merchant-initiated payment on the registration: `fields` (amount, currency, payment type) and the standing
    /// instruction, no brand and no card data (the registration holds the card), posted to the registration's payments.
    static func merchantInitiatedRequest(
        _ fields: [(key: String, value: String)], reason: MITReason, usage: CredentialUsage, references: [String: String],
        orderReference: String, paymentType: String
    ) throws(ConnectorBuildError) -> GatewayRequest {
        guard let registration = references[registrationId], !registration.isEmpty,
              // It becomes a path segment: ASCII letters and digits only (OPP's ids are 32 hex digits).
              registration.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }),
              let initial = references[initialTransactionId], !initial.isEmpty else {
            throw ConnectorBuildError(AuthorizeError.cardDataMissing("the stored credential holds no usable registration id or initial transaction id"))
        }
        let all = fields + merchantInitiatedParameters(reason, usage: usage, initialTransactionId: initial)
        return GatewayRequest(orderReference: orderReference, requestTypes: [paymentType], claims: [
            pathKey: .string(merchantInitiatedPath(registrationId: registration)),
            "payload": .object(all.map { ($0.key, .string($0.value)) }),
        ])
    }
}

extension OPPConnector {
    public static var storedCredentials: StoredCredentialSupport? { OPPStoredCredentials.support }

    public static func storesCredential(_ request: GatewayRequest) -> Bool {
        request.claims["payload"]?["createRegistration"]?.stringValue == "true"
    }
}
