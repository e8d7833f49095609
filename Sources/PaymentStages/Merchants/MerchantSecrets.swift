/// The secret half of a merchant's configuration, stored as one encrypted blob (AAD = merchant id).
public struct MerchantSecrets: Codable, Sendable, Equatable {
    /// PEM private keys, index-aligned with ``MerchantConfig/identities``.
    public var privateKeys: [String]
    public var jwtSecret: String?
    public var webhookSecrets: [String]

    public init(privateKeys: [String], jwtSecret: String?, webhookSecrets: [String]) {
        self.privateKeys = privateKeys
        self.jwtSecret = jwtSecret
        self.webhookSecrets = webhookSecrets
    }
}
