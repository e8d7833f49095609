/// The non-secret half of a merchant's configuration, stored as `merchants.config` (jsonb) and safe
/// to print (`paypipe merchant show`).
public struct MerchantConfig: Codable, Sendable, Equatable {
    public struct IdentitySummary: Codable, Sendable, Equatable {
        public var certificatePem: String
        /// base64 SHA-256 of the certificate's SubjectPublicKeyInfo: what tokens name in `publicKeyHash`.
        public var publicKeyHash: String
        public var keyType: String
        public var notAfter: String?
    }

    public struct Gateway: Codable, Sendable, Equatable {
        public var type: String
        public var baseUrl: String
        public var siteReference: String
        public var jwtUsername: String
        public var mode: MerchantDocument.Gateway.Mode
        public var requestTypes: [String]
    }

    public struct Webhook: Codable, Sendable, Equatable {
        public var url: String
        public var enabled: Bool
    }

    public var identities: [IdentitySummary]
    public var gateway: Gateway?
    public var webhook: Webhook?
}
