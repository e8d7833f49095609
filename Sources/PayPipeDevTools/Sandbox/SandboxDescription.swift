/// What `paypipe sandbox init` and `paypipe job publish --sample` say about the sandbox's merchants, one per connector:
/// the sandbox describes its own documents, so the CLI names no processor.
extension SandboxEnvironment {
    /// `paypipe sandbox init`'s usage lines for the merchant documents beside `merchant.json` and `merchant-jwt.json`,
    /// and for `services.env`.
    public static let connectorDocumentsUsage = """
        merchant-opp.json  a merchant on ACI's OPP (sandbox-merchant-opp, the simulator's OPP face), the same
                    identities and webhook, merchant-decrypts
        merchant-tappay.json  a merchant on TapPay (sandbox-merchant-tappay, the simulator's TapPay face), the
                    same webhook; its jobs carry a tapPayPrime
        services.env   PAYPIPE_SIM_WEBSERVICES_USERS, PAYPIPE_SIM_MERCHANTS, PAYPIPE_SIM_OPP_TOKENS,
                    PAYPIPE_SIM_TAPPAY_PARTNERS and PAYPIPE_WEBHOOK_SECRET for the simulator and receiver
    """

    /// `paypipe job publish`'s usage lines on how the sample jobs follow the merchant's connector.
    public static let sampleJobsUsage = """
      The jobs follow the merchant's connector: sandbox-merchant-opp's tokens are in GBP, EUR and USD;
      sandbox-merchant-tappay's jobs carry a fresh tapPayPrime (valid 90 s from now) instead of a token,
      in TWD, USD and HKD, with a valid job for the RSA_v1 one and a TWD amount in cents
      (amountNotRepresentable) for the amount mismatch.
    """

    /// The paths `paypipe sandbox init` prints, as one JSON object (its documented output).
    public var pathsJSON: String {
        """
        {"directory":"\(directory)","trustRoot":"\(trustRootPath)",\
        "dataKeyFile":"\(dataKeyPath)","merchantDocument":"\(merchantDocumentPath)",\
        "jwtMerchantDocument":"\(jwtMerchantDocumentPath)",\
        "oppMerchantDocument":"\(oppMerchantDocumentPath)",\
        "tapPayMerchantDocument":"\(tapPayMerchantDocumentPath)",\
        "servicesEnvironment":"\(servicesEnvironmentPath)"}
        """
    }
}
