/// The non-secret half of a merchant's configuration, stored as `merchants.config` (jsonb) and safe
/// to print (`paypipe merchant show`).
public struct MerchantConfig: Codable, Sendable, Equatable {
    public struct IdentitySummary: Codable, Sendable, Equatable {
        public var certificatePem: String
        /// base64 SHA-256 of the certificate's SubjectPublicKeyInfo: what tokens name in `publicKeyHash`.
        public var publicKeyHash: String
        public var keyType: String
        /// The certificate's expiry (ISO 8601, UTC), recorded by `paypipe merchant apply`; absent in rows applied
        /// before it was recorded (read from `certificatePem` then, see ``CertificateExpiry``).
        public var notAfter: String?
    }

    /// The Apple merchant-identity certificate (`merchantIdentityCertificateFile`): certificate only, kept for
    /// expiry tracking (it authenticates merchant-validation requests, which PayPipe does not make).
    public struct CertificateSummary: Codable, Sendable, Equatable {
        public var certificatePem: String
        public var subject: String
        public var notAfter: String
    }

    public struct Gateway: Codable, Sendable, Equatable {
        public var type: String
        public var baseUrl: String
        public var siteReference: String
        /// Absent for a `webservices` merchant.
        public var jwtUsername: String?
        public var mode: MerchantDocument.Gateway.Mode
        public var requestTypes: [String]
        /// Absent in rows applied before transports existed: those are `jwt` (``resolvedTransport``).
        public var transport: MerchantDocument.Gateway.Transport? = nil
        public var webservicesUsername: String? = nil
        /// The connector's own section without its secret (absent for connectors without one, and in rows applied
        /// before them).
        public var sections = ConnectorSections()

        /// The connector `type` names (``MerchantDocument/Gateway/connector``).
        public var connector: ConnectorKind { ConnectorKind(gatewayType: type) ?? ConnectorRegistry.fallback }
        /// The document's `gateway.captureMode` / `gateway.captureWithin` as applied (absent: automatic).
        public var captureMode: String? = nil
        public var captureWithin: String? = nil

        public var resolvedTransport: MerchantDocument.Gateway.Transport { transport ?? .jwt }

        /// The user requests go out as: the Webservices user or the JWT issuer.
        public var username: String? {
            switch resolvedTransport {
            case .webservices: webservicesUsername
            case .jwt: jwtUsername
            }
        }
    }

    public struct Webhook: Codable, Sendable, Equatable {
        public var url: String
        public var enabled: Bool
        /// The document's `webhook.ratePerSecond`: the merchant's rate limit, overriding `PAYPIPE_WEBHOOK_RATE`.
        public var ratePerSecond: Double? = nil
    }

    public var identities: [IdentitySummary]
    public var gateway: Gateway?
    public var webhook: Webhook?
    public var merchantIdentityCertificate: CertificateSummary?
    /// The document's `applicationDataCheck`; absent (rows applied before it existed) means strict.
    public var applicationDataCheck: ApplicationDataBinding.Check?
    /// The document's `publishers` (``PublisherRule``); absent (also in rows applied before it existed): any publisher.
    public var publishers: [String]?

    public init(identities: [IdentitySummary], gateway: Gateway?, webhook: Webhook?, merchantIdentityCertificate: CertificateSummary? = nil,
                applicationDataCheck: ApplicationDataBinding.Check? = nil, publishers: [String]? = nil) {
        self.publishers = publishers
        self.identities = identities
        self.gateway = gateway
        self.webhook = webhook
        self.merchantIdentityCertificate = merchantIdentityCertificate
        self.applicationDataCheck = applicationDataCheck
    }
}

extension MerchantConfig.Gateway {
    enum CodingKeys: String, CodingKey {
        case type, baseUrl, siteReference, jwtUsername, mode, requestTypes, transport, webservicesUsername, captureMode, captureWithin
    }

    /// As synthesised, with the connector sections beside the other fields.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        type = try container.decode(String.self, forKey: .type)
        baseUrl = try container.decode(String.self, forKey: .baseUrl)
        siteReference = try container.decode(String.self, forKey: .siteReference)
        jwtUsername = try container.decodeIfPresent(String.self, forKey: .jwtUsername)
        mode = try container.decode(MerchantDocument.Gateway.Mode.self, forKey: .mode)
        requestTypes = try container.decode([String].self, forKey: .requestTypes)
        transport = try container.decodeIfPresent(MerchantDocument.Gateway.Transport.self, forKey: .transport)
        webservicesUsername = try container.decodeIfPresent(String.self, forKey: .webservicesUsername)
        captureMode = try container.decodeIfPresent(String.self, forKey: .captureMode)
        captureWithin = try container.decodeIfPresent(String.self, forKey: .captureWithin)
        sections = try ConnectorSections(from: decoder)
    }

    /// The document's form without its secrets (a config holds none): one encoding of the shared fields, in the same
    /// order, for both.
    public func encode(to encoder: any Encoder) throws {
        var document = MerchantDocument.Gateway(
            type: type, baseUrl: baseUrl, siteReference: siteReference, jwtUsername: jwtUsername, mode: mode, requestTypes: requestTypes,
            transport: transport, webservicesUsername: webservicesUsername, sections: sections)
        document.captureMode = captureMode
        document.captureWithin = captureWithin
        try document.encode(to: encoder)
    }
}
