/// The secret half of a merchant's configuration, stored as one encrypted blob (AAD = merchant id).
/// Its description and mirror show only what is set, so an accidental interpolation leaks nothing.
public struct MerchantSecrets: Codable, Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// PEM private keys, index-aligned with ``MerchantConfig/identities``.
    public var privateKeys: [String]
    public var jwtSecret: String?
    public var webhookSecrets: [String]
    /// The Webservices user's password (`webservices` transport); absent in blobs sealed before it existed.
    public var webservicesPassword: String?
    /// The connector sections' secrets by their ``ConnectorSection/secretKey`` (each connector's folder gives it an
    /// accessor), sealed beside the other fields; absent in older blobs.
    public var connectorSecrets: [String: String]

    public init(privateKeys: [String], jwtSecret: String?, webhookSecrets: [String], webservicesPassword: String? = nil,
                connectorSecrets: [String: String] = [:]) {
        self.connectorSecrets = connectorSecrets
        self.webservicesPassword = webservicesPassword
        self.privateKeys = privateKeys
        self.jwtSecret = jwtSecret
        self.webhookSecrets = webhookSecrets
    }

    public var description: String {
        let connectors = ConnectorRegistry.sectionTypes.map { "\($0.secretKey): \(connectorSecrets[$0.secretKey] == nil ? "unset" : "set"), " }.joined()
        return "MerchantSecrets(privateKeys: \(privateKeys.count), jwtSecret: \(jwtSecret == nil ? "unset" : "set"), webservicesPassword: \(webservicesPassword == nil ? "unset" : "set"), \(connectors)webhookSecrets: \(webhookSecrets.count))"
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

extension MerchantSecrets {
    enum CodingKeys: String, CodingKey {
        case privateKeys, jwtSecret, webhookSecrets, webservicesPassword
    }

    /// As synthesised, with each connector's secret under its own key beside the other fields.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        privateKeys = try container.decode([String].self, forKey: .privateKeys)
        jwtSecret = try container.decodeIfPresent(String.self, forKey: .jwtSecret)
        webhookSecrets = try container.decode([String].self, forKey: .webhookSecrets)
        webservicesPassword = try container.decodeIfPresent(String.self, forKey: .webservicesPassword)
        let connectors = try decoder.container(keyedBy: AnyCodingKey.self)
        connectorSecrets = [:]
        for type in ConnectorRegistry.sectionTypes {
            connectorSecrets[type.secretKey] = try connectors.decodeIfPresent(String.self, forKey: AnyCodingKey(type.secretKey))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(privateKeys, forKey: .privateKeys)
        try container.encodeIfPresent(jwtSecret, forKey: .jwtSecret)
        try container.encode(webhookSecrets, forKey: .webhookSecrets)
        try container.encodeIfPresent(webservicesPassword, forKey: .webservicesPassword)
        var connectors = encoder.container(keyedBy: AnyCodingKey.self)
        for (key, secret) in connectorSecrets.sorted(by: { $0.key < $1.key }) { try connectors.encode(secret, forKey: AnyCodingKey(key)) }
    }
}
