/// The secret half of a merchant's configuration, stored as one encrypted blob (AAD = merchant id).
/// Its description and mirror show only what is set, so an accidental interpolation leaks nothing.
public struct MerchantSecrets: Codable, Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// PEM private keys, index-aligned with ``MerchantConfig/identities``.
    public var privateKeys: [String]
    public var jwtSecret: String?
    public var webhookSecrets: [String]

    public init(privateKeys: [String], jwtSecret: String?, webhookSecrets: [String]) {
        self.privateKeys = privateKeys
        self.jwtSecret = jwtSecret
        self.webhookSecrets = webhookSecrets
    }

    public var description: String {
        "MerchantSecrets(privateKeys: \(privateKeys.count), jwtSecret: \(jwtSecret == nil ? "unset" : "set"), webhookSecrets: \(webhookSecrets.count))"
    }

    public var customMirror: Mirror { Mirror(reflecting: description) }
}
