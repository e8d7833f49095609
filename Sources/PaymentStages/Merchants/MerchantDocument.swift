import Pipeline
import Foundation

/// The merchant configuration document applied with `paypipe merchant apply --file merchant.json`
/// (documented in docs/merchant-config.md). Secrets in it (JWT secret, Webservices password, webhook secret, private keys)
/// are stored encrypted under the data key and never printed back.
public struct MerchantDocument: Codable, Sendable, Equatable {
    public var id: String
    public var appleMerchantIdentifier: String?
    public var identities: [Identity]
    public var gateway: Gateway?
    public var webhook: Webhook?
    /// Optional: the Apple merchant-identity certificate (PEM, certificate only — never its key), relative to the
    /// document's folder like the identities' files. Recorded only so that its expiry is tracked (`paypipe merchant
    /// certs`, `paypipe_certificate_not_after_seconds`, `certificate_expiring`).
    public var merchantIdentityCertificateFile: String?
    /// Optional: `"strict"` (default) or `"when-present"`: how decrypt binds the job's `applicationData` to the token
    /// header's (``ApplicationDataBinding``); `when-present` accepts a header value from a job without one, during a
    /// migration of the publishers.
    public var applicationDataCheck: ApplicationDataBinding.Check?
    /// Optional: the broker users allowed to publish this merchant's jobs and operations (``MerchantPublishers``);
    /// absent, any publisher may.
    public var publishers: MerchantPublishers?

    /// A payment-processing identity: certificate + private key, from files or inline PEM.
    public struct Identity: Codable, Sendable, Equatable {
        public var certificateFile: String?
        public var privateKeyFile: String?
        public var certificatePem: String?
        public var privateKeyPem: String?

        public init(certificateFile: String? = nil, privateKeyFile: String? = nil, certificatePem: String? = nil, privateKeyPem: String? = nil) {
            self.certificateFile = certificateFile
            self.privateKeyFile = privateKeyFile
            self.certificatePem = certificatePem
            self.privateKeyPem = privateKeyPem
        }
    }

    public struct Gateway: Codable, Sendable, Equatable {
        public enum Mode: String, Codable, Sendable {
            case merchantDecrypts = "merchant-decrypts"
            case gatewayDecrypts = "gateway-decrypts"
        }

        /// How submit reaches the gateway (docs/merchant-config.md, docs/submit.md): declared with the endpoint that
        /// carries it (``GatewayEndpoint/Transport``).
        public typealias Transport = GatewayEndpoint.Transport

        /// Picks the connector (``ConnectorKind/init(gatewayType:)``): one of ``ConnectorRegistry``'s aliases.
        public var type: String
        public var baseUrl: String
        /// The processor account ("site reference"); may be left out when the connector's own section names the
        /// account (it then reads as that).
        public var siteReference: String
        /// Needed by the `jwt` transport only.
        public var jwtUsername: String?
        public var jwtSecret: String?
        public var mode: Mode
        public var requestTypes: [String]?
        /// Absent: `jwt` when the document carries `jwtUsername`/`jwtSecret` (documents written before the field
        /// existed), else `webservices` (``resolvedTransport``).
        public var transport: Transport?
        /// The Webservices user (HTTP Basic) of the `webservices` transport; its password is a secret.
        public var webservicesUsername: String?
        public var webservicesPassword: String?
        /// The connector's own section, for connectors that have one (``ConnectorSection``, declared in the connector's
        /// folder with its accessor); its secret is sealed.
        public var sections = ConnectorSections()

        /// The connector `type` names (``ConnectorRegistry/fallback`` for a type no connector claims: the authorize stage refuses it).
        public var connector: ConnectorKind { ConnectorKind(gatewayType: type) ?? ConnectorRegistry.fallback }
        /// `automatic` (absent: the behaviour before operations existed) or `manual`: the AUTH is suspended
        /// (held in its connector's terms) until a capture (docs/operations-lifecycle.md); a job's `captureMode` overrides it.
        public var captureMode: String?
        /// With `manual`: an ISO 8601 duration after which an uncaptured authorisation is voided (``CapturePolicy``).
        public var captureWithin: String?

        /// The capture policy the document states (validated when applied).
        public func capturePolicy() throws(CapturePolicy.Invalid) -> CapturePolicy {
            try CapturePolicy.automatic.overridden(mode: captureMode, captureWithin: captureWithin)
        }

        /// The transport this document selects.
        public var resolvedTransport: Transport {
            if let transport { return transport }
            return jwtUsername != nil || jwtSecret != nil ? .jwt : .webservices
        }

        public init(type: String, baseUrl: String, siteReference: String, jwtUsername: String? = nil, jwtSecret: String? = nil,
                    mode: Mode, requestTypes: [String]? = nil, transport: Transport? = nil,
                    webservicesUsername: String? = nil, webservicesPassword: String? = nil, sections: ConnectorSections = ConnectorSections()) {
            self.sections = sections
            self.type = type
            self.baseUrl = baseUrl
            self.siteReference = siteReference
            self.jwtUsername = jwtUsername
            self.jwtSecret = jwtSecret
            self.mode = mode
            self.requestTypes = requestTypes
            self.transport = transport
            self.webservicesUsername = webservicesUsername
            self.webservicesPassword = webservicesPassword
        }
    }

    public struct Webhook: Codable, Sendable, Equatable {
        public var url: String
        /// The current `whsec_…` signing secret.
        public var secret: String?
        /// Secrets still being rotated out: requests carry one signature per secret (current first) until the
        /// merchant's endpoint has switched, as Standard Webhooks recommends for zero-downtime rotation.
        public var previousSecrets: [String]?
        /// Requests per second to this merchant's endpoints (> 0), overriding `PAYPIPE_WEBHOOK_RATE` for them.
        public var ratePerSecond: Double?

        public init(url: String, secret: String? = nil, previousSecrets: [String]? = nil, ratePerSecond: Double? = nil) {
            self.url = url
            self.secret = secret
            self.previousSecrets = previousSecrets
            self.ratePerSecond = ratePerSecond
        }
    }

    /// Whether the document itself holds a secret (JWT secret, webhook secrets, an inline private key), which
    /// makes the document file a secret file (``SecretFile``) rather than only the key files it names.
    public var containsInlineSecrets: Bool {
        gateway?.jwtSecret != nil || gateway?.webservicesPassword != nil || !(gateway?.sections.secrets.isEmpty ?? true)
            || webhook?.secret != nil || !(webhook?.previousSecrets ?? []).isEmpty
            || identities.contains { $0.privateKeyPem != nil }
    }

    public init(id: String, appleMerchantIdentifier: String?, identities: [Identity], gateway: Gateway?, webhook: Webhook?,
                merchantIdentityCertificateFile: String? = nil, applicationDataCheck: ApplicationDataBinding.Check? = nil,
                publishers: MerchantPublishers? = nil) {
        self.publishers = publishers
        self.id = id
        self.appleMerchantIdentifier = appleMerchantIdentifier
        self.identities = identities
        self.gateway = gateway
        self.webhook = webhook
        self.merchantIdentityCertificateFile = merchantIdentityCertificateFile
        self.applicationDataCheck = applicationDataCheck
    }
}

extension MerchantDocument {
    enum CodingKeys: String, CodingKey {
        case id, appleMerchantIdentifier, identities, gateway, webhook, merchantIdentityCertificateFile, applicationDataCheck, publishers
    }

    /// As synthesised, except that `identities` may be absent when the processor decrypts (`gateway.mode`
    /// `gateway-decrypts`: the merchant sends a processor's one-time credential or Apple's encrypted token), where
    /// PayPipe holds no Apple identity; it reads as none. Wherever PayPipe decrypts (merchant-decrypts, or no gateway)
    /// a document without it is still refused as before.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        appleMerchantIdentifier = try container.decodeIfPresent(String.self, forKey: .appleMerchantIdentifier)
        gateway = try container.decodeIfPresent(Gateway.self, forKey: .gateway)
        webhook = try container.decodeIfPresent(Webhook.self, forKey: .webhook)
        merchantIdentityCertificateFile = try container.decodeIfPresent(String.self, forKey: .merchantIdentityCertificateFile)
        applicationDataCheck = try container.decodeIfPresent(ApplicationDataBinding.Check.self, forKey: .applicationDataCheck)
        publishers = try container.decodeIfPresent(MerchantPublishers.self, forKey: .publishers)
        if let identities = try container.decodeIfPresent([Identity].self, forKey: .identities) {
            self.identities = identities
        } else if gateway?.mode == .gatewayDecrypts {
            identities = []
        } else {
            throw DecodingError.keyNotFound(CodingKeys.identities, .init(
                codingPath: container.codingPath, debugDescription: "identities is required unless gateway.mode is gateway-decrypts"))
        }
    }
}

extension MerchantDocument.Gateway {
    enum CodingKeys: String, CodingKey {
        case type, baseUrl, siteReference, jwtUsername, jwtSecret, mode, requestTypes, transport, webservicesUsername, webservicesPassword,
             captureMode, captureWithin
    }

    /// As synthesised, except that `siteReference` may be absent when the connector's section names the
    /// account (other documents keep requiring it: `paypipe merchant apply` refuses an empty one).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        type = try container.decode(String.self, forKey: .type)
        baseUrl = try container.decode(String.self, forKey: .baseUrl)
        jwtUsername = try container.decodeIfPresent(String.self, forKey: .jwtUsername)
        jwtSecret = try container.decodeIfPresent(String.self, forKey: .jwtSecret)
        mode = try container.decode(Mode.self, forKey: .mode)
        requestTypes = try container.decodeIfPresent([String].self, forKey: .requestTypes)
        transport = try container.decodeIfPresent(Transport.self, forKey: .transport)
        webservicesUsername = try container.decodeIfPresent(String.self, forKey: .webservicesUsername)
        webservicesPassword = try container.decodeIfPresent(String.self, forKey: .webservicesPassword)
        sections = try ConnectorSections(from: decoder)
        captureMode = try container.decodeIfPresent(String.self, forKey: .captureMode)
        captureWithin = try container.decodeIfPresent(String.self, forKey: .captureWithin)
        if let site = try container.decodeIfPresent(String.self, forKey: .siteReference) {
            siteReference = site
        } else if let account = sections.account {
            siteReference = account
        } else {
            throw DecodingError.keyNotFound(CodingKeys.siteReference, .init(codingPath: container.codingPath, debugDescription: "gateway.siteReference is required"))
        }
    }

    /// As synthesised, with the connector sections beside the other fields.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(baseUrl, forKey: .baseUrl)
        try container.encode(siteReference, forKey: .siteReference)
        try container.encodeIfPresent(jwtUsername, forKey: .jwtUsername)
        try container.encodeIfPresent(jwtSecret, forKey: .jwtSecret)
        try container.encode(mode, forKey: .mode)
        try container.encodeIfPresent(requestTypes, forKey: .requestTypes)
        try container.encodeIfPresent(transport, forKey: .transport)
        try container.encodeIfPresent(webservicesUsername, forKey: .webservicesUsername)
        try container.encodeIfPresent(webservicesPassword, forKey: .webservicesPassword)
        try container.encodeIfPresent(captureMode, forKey: .captureMode)
        try container.encodeIfPresent(captureWithin, forKey: .captureWithin)
        try sections.encode(to: encoder)
    }
}
