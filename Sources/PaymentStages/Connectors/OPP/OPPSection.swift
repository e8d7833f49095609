/// `gateway.opp` of the merchant document: OPP's section, its `accessToken` sealed as `oppAccessToken`.
extension OPPSettings: ConnectorSection {
    public static var documentKey: String { "opp" }
    public static var secretKey: String { "oppAccessToken" }
    public var account: String { entityId }
    public var secret: String? { accessToken }
}

extension MerchantDocument.Gateway {
    /// The OPP connector's settings (`type` `opp`); its `accessToken` is a secret.
    public var opp: OPPSettings? {
        get { sections[OPPSettings.self] }
        set { sections[OPPSettings.self] = newValue }
    }

    /// A gateway with OPP's section.
    public init(type: String, baseUrl: String, siteReference: String, jwtUsername: String? = nil, jwtSecret: String? = nil,
                mode: Mode, requestTypes: [String]? = nil, transport: Transport? = nil,
                webservicesUsername: String? = nil, webservicesPassword: String? = nil, opp: OPPSettings?) {
        self.init(type: type, baseUrl: baseUrl, siteReference: siteReference, jwtUsername: jwtUsername, jwtSecret: jwtSecret, mode: mode,
                  requestTypes: requestTypes, transport: transport, webservicesUsername: webservicesUsername, webservicesPassword: webservicesPassword)
        self.opp = opp
    }
}

extension MerchantConfig.Gateway {
    /// OPP's non-secret settings.
    public var opp: OPPSettings? {
        get { sections[OPPSettings.self] }
        set { sections[OPPSettings.self] = newValue }
    }
}

extension MerchantSecrets {
    /// OPP's bearer token (`gateway.opp.accessToken`).
    public var oppAccessToken: String? {
        get { connectorSecrets[OPPSettings.secretKey] }
        set { connectorSecrets[OPPSettings.secretKey] = newValue }
    }
}
