/// Where and as whom a merchant's requests go: its gateway settings, the transport, and the transport's secret (the
/// JWT secret, which both signs the requests and verifies the answers, or the Webservices user's password for HTTP
/// Basic). The description never shows the secret.
public struct GatewayEndpoint: Sendable, Equatable, CustomStringConvertible {
    public typealias Transport = MerchantDocument.Gateway.Transport

    /// e.g. `https://webservices.securetrading.net`; requests go to `{baseUrl}/jwt/` or `{baseUrl}/json/`.
    public let baseUrl: String
    public let siteReference: String
    public let transport: Transport
    /// The JWT issuer (`jwt`) or the Webservices user, also the envelope's `alias` (`webservices`).
    public let username: String
    let secret: String

    /// A `jwt` endpoint.
    public init(baseUrl: String, siteReference: String, jwtUsername: String, secret: String) {
        self.init(baseUrl: baseUrl, siteReference: siteReference, transport: .jwt, username: jwtUsername, secret: secret)
    }

    public init(baseUrl: String, siteReference: String, transport: Transport, username: String, secret: String) {
        self.baseUrl = baseUrl
        self.siteReference = siteReference
        self.transport = transport
        self.username = username
        self.secret = secret
    }

    /// The `jwt` transport's issuer (the username whatever the transport, kept for existing callers).
    public var jwtUsername: String { username }

    /// The `/jwt/` URL, tolerating a base URL written with or without a trailing slash.
    public var jwtURL: String { trimmedBase + "/jwt/" }

    /// The Webservices JSON API's `/json/` URL (the Python SDK's `datacenterurl` + `datacenterpath`).
    public var jsonURL: String { trimmedBase + "/json/" }

    /// The URL this endpoint's transport posts to (also the key of its circuit in the endpoint gate).
    public var url: String {
        switch transport {
        case .jwt: jwtURL
        case .webservices: jsonURL
        }
    }

    private var trimmedBase: String { baseUrl.hasSuffix("/") ? String(baseUrl.dropLast()) : baseUrl }

    public var description: String { "GatewayEndpoint(\(url), site: \(siteReference), user: \(username))" }
}
