import Pipeline

/// Trust Payments' stored credentials (docs/recurring.md, "Trust Payments"): the first AUTH carries
/// `credentialsonfile` `1`; a later MIT is a child AUTH of that parent (`parenttransactionreference`), which "inherits
/// the previously stored payment … details" [doc: help.trustpayments.com/hc/en-us/articles/4402772396817], so no
/// network token is kept.
enum TrustPaymentsStoredCredentials {
    /// The credential reference's name in ``CredentialSecrets/references``.
    static let parentReference = "parentTransactionReference"

    /// `initiationreason` letters documented for MITs: `A` re-authorisation, `C` unscheduled, `D` delayed charges
    /// [doc: help.trustpayments.com/hc/en-us/articles/12799013413137]. No letter for a resubmission was found, so it
    /// is not offered.
    static let support = StoredCredentialSupport(
        usages: [.recurring, .unscheduled, .installment],
        mitReasons: [.recurring, .installment, .unscheduled, .reauthorization, .delayedCharge], needsNetworkToken: false)

    /// The fields a storing (customer-initiated) AUTH adds: "the customer agreed for the payment credentials to be
    /// stored" [doc: docs.trustpayments.com … credentials-on-file-ppg].
    static func initialFields(_ usage: CredentialUsage) -> [(String, String)] {
        [("credentialsonfile", "1")]
    }

    /// The fields of a merchant-initiated child AUTH for `reason`, or nil for a reason without a documented code.
    /// `RECUR` is the account type "for processing recurring payments" [doc: article 4403193095441];
    /// `credentialsonfile` `2` on the later payment and `subscriptiontype` are from public merchant code [secondary];
    /// the account type of unscheduled and industry-practice MITs (`ECOM`) and `INSTALLMENT` are [UNCONFIRMED].
    static func merchantInitiatedFields(_ reason: MITReason, parentTransactionReference: String) -> [(String, String)]? {
        let common = [("parenttransactionreference", parentTransactionReference), ("credentialsonfile", "2")]
        switch reason {
        case .recurring: return common + [("accounttypedescription", "RECUR"), ("subscriptiontype", "RECURRING")]
        case .installment: return common + [("accounttypedescription", "RECUR"), ("subscriptiontype", "INSTALLMENT")]
        case .unscheduled: return common + [("accounttypedescription", "ECOM"), ("initiationreason", "C")]
        case .reauthorization: return common + [("accounttypedescription", "ECOM"), ("initiationreason", "A")]
        case .delayedCharge: return common + [("accounttypedescription", "ECOM"), ("initiationreason", "D")]
        case .resubmission: return nil
        }
    }
}

extension TrustPaymentsClient {
    public static var storedCredentials: StoredCredentialSupport? { TrustPaymentsStoredCredentials.support }

    /// The parent of later child AUTHs is the storing AUTH itself: its `transactionreference` [doc: help article 4402772396817].
    public static func storesCredential(_ request: GatewayRequest) -> Bool {
        request.claims["payload"]?["credentialsonfile"]?.stringValue == "1"
    }

    public static func credentialReferences(of result: GatewayResult) -> [String: String] {
        result.transactionReference.map { [TrustPaymentsStoredCredentials.parentReference: $0] } ?? [:]
    }
}
