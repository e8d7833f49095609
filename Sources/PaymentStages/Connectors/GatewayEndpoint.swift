/// Where and as whom a merchant's requests go: its connector, account, transport, user and secret, as the connector
/// builds them from the merchant's gateway section (``ConnectorPlugin/endpoint(_:secret:site:)``). The description
/// never shows the secret.
public struct GatewayEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// How submit reaches the gateway: the merchant document's `gateway.transport` (docs/merchant-config.md,
    /// docs/submit.md; ``MerchantDocument/Gateway/Transport``).
    public enum Transport: String, Codable, Sendable, CaseIterable {
        /// The Webservices JSON API: `POST {baseUrl}/json/` with HTTP Basic as a Webservices user, the route
        /// of the processor's server-side SDKs, on which its status query is documented.
        case webservices
        /// `POST {baseUrl}/jwt/` with a request JWT signed by a "Webservices JWT" user: for accounts that only
        /// have such a user.
        case jwt
    }

    /// The processor's base URL (`gateway.baseUrl`); the connector appends its paths (``url``).
    public let baseUrl: String
    public let siteReference: String
    public let transport: Transport
    /// The user requests go out as, for connectors that have one (else empty).
    public let username: String
    let secret: String
    /// The processor (``GatewayConnector``) calls to this endpoint go to; ``siteReference`` is its account.
    public let connector: ConnectorKind

    /// A `jwt` endpoint.
    public init(baseUrl: String, siteReference: String, jwtUsername: String, secret: String) {
        self.init(baseUrl: baseUrl, siteReference: siteReference, transport: .jwt, username: jwtUsername, secret: secret)
    }

    public init(baseUrl: String, siteReference: String, transport: Transport, username: String, secret: String,
                connector: ConnectorKind = ConnectorRegistry.fallback) {
        self.connector = connector
        self.baseUrl = baseUrl
        self.siteReference = siteReference
        self.transport = transport
        self.username = username
        self.secret = secret
    }

    /// The `jwt` transport's issuer (the username whatever the transport, kept for existing callers).
    public var jwtUsername: String { username }

    /// The URL this endpoint's calls post to (also the key of its circuit in the endpoint gate).
    public var url: String { connector.plugin.url(self) }

    var trimmedBase: String { baseUrl.hasSuffix("/") ? String(baseUrl.dropLast()) : baseUrl }

    public var description: String { "GatewayEndpoint(\(url), site: \(siteReference), user: \(username))" }
}
