/// `gateway.tapPay` of the merchant document: TapPay's section, its `partnerKey` sealed as `tapPayPartnerKey`.
extension TapPaySettings: ConnectorSection {
    public static var documentKey: String { "tapPay" }
    public static var secretKey: String { "tapPayPartnerKey" }
    public var account: String { merchantId }
    public var secret: String? { partnerKey }
}

extension MerchantDocument.Gateway {
    /// The TapPay connector's settings (`type` `tappay`); its `partnerKey` is a secret.
    public var tapPay: TapPaySettings? {
        get { sections[TapPaySettings.self] }
        set { sections[TapPaySettings.self] = newValue }
    }

    /// A gateway with TapPay's section.
    public init(type: String, baseUrl: String, siteReference: String, jwtUsername: String? = nil, jwtSecret: String? = nil,
                mode: Mode, requestTypes: [String]? = nil, transport: Transport? = nil,
                webservicesUsername: String? = nil, webservicesPassword: String? = nil, tapPay: TapPaySettings?) {
        self.init(type: type, baseUrl: baseUrl, siteReference: siteReference, jwtUsername: jwtUsername, jwtSecret: jwtSecret, mode: mode,
                  requestTypes: requestTypes, transport: transport, webservicesUsername: webservicesUsername, webservicesPassword: webservicesPassword)
        self.tapPay = tapPay
    }
}

extension MerchantConfig.Gateway {
    /// TapPay's non-secret settings.
    public var tapPay: TapPaySettings? {
        get { sections[TapPaySettings.self] }
        set { sections[TapPaySettings.self] = newValue }
    }
}

extension MerchantSecrets {
    /// TapPay's partner key (`gateway.tapPay.partnerKey`).
    public var tapPayPartnerKey: String? {
        get { connectorSecrets[TapPaySettings.secretKey] }
        set { connectorSecrets[TapPaySettings.secretKey] = newValue }
    }
}
