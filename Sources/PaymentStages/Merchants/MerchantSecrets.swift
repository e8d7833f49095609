/// The secret half of a merchant's configuration, stored as one encrypted blob (AAD = merchant id).
/// Its description and mirror show only what is set, so an accidental interpolation leaks nothing.
public struct MerchantSecrets: Codable, Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// PEM private keys, index-aligned with ``MerchantConfig/identities``.
    public var privateKeys: [String]
    public var jwtSecret: String?
    public var webhookSecrets: [String]
    /// The Webservices user's password (`webservices` transport); absent in blobs sealed before it existed.
    public var webservicesPassword: String?
    /// OPP's bearer token and TapPay's partner key (`opp.accessToken`, `tapPay.partnerKey`); absent in older blobs.
    public var oppAccessToken: String?
    public var tapPayPartnerKey: String?

    public init(privateKeys: [String], jwtSecret: String?, webhookSecrets: [String], webservicesPassword: String? = nil,
                oppAccessToken: String? = nil, tapPayPartnerKey: String? = nil) {
        self.oppAccessToken = oppAccessToken
        self.tapPayPartnerKey = tapPayPartnerKey
        self.webservicesPassword = webservicesPassword
        self.privateKeys = privateKeys
        self.jwtSecret = jwtSecret
        self.webhookSecrets = webhookSecrets
    }

    public var description: String {
        "MerchantSecrets(privateKeys: \(privateKeys.count), jwtSecret: \(jwtSecret == nil ? "unset" : "set"), webservicesPassword: \(webservicesPassword == nil ? "unset" : "set"), oppAccessToken: \(oppAccessToken == nil ? "unset" : "set"), tapPayPartnerKey: \(tapPayPartnerKey == nil ? "unset" : "set"), webhookSecrets: \(webhookSecrets.count))"
    }

    /// The secret of the merchant's transport: the JWT secret or the Webservices password.
    public func gatewaySecret(for transport: MerchantDocument.Gateway.Transport) -> String? {
        switch transport {
        case .jwt: jwtSecret
        case .webservices: webservicesPassword
        }
    }

    /// The secret calls to `gateway`'s connector need (``ConnectorPlugin/secret(in:for:)``).
    public func connectorSecret(for gateway: MerchantConfig.Gateway) -> String? {
        gateway.connector.plugin.secret(in: self, for: gateway)
    }

    public var customMirror: Mirror { Mirror(reflecting: description) }
}
