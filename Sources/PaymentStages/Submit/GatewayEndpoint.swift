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
    /// The processor (``GatewayConnector``) calls to this endpoint go to. For OPP, ``siteReference`` is the `entityId`
    /// and the secret the bearer token; for TapPay, ``siteReference`` is the `merchant_id` and the secret the partner key.
    public let connector: ConnectorKind

    /// A `jwt` endpoint.
    public init(baseUrl: String, siteReference: String, jwtUsername: String, secret: String) {
        self.init(baseUrl: baseUrl, siteReference: siteReference, transport: .jwt, username: jwtUsername, secret: secret)
    }

    public init(baseUrl: String, siteReference: String, transport: Transport, username: String, secret: String,
                connector: ConnectorKind = .trustPayments) {
        self.connector = connector
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
        switch (connector, transport) {
        case (.opp, _): trimmedBase + "/v1/payments"
        case (.tapPay, _): trimmedBase + TapPayWire.payByPrimePath
        case (.trustPayments, .jwt): jwtURL
        case (.trustPayments, .webservices): jsonURL
        }
    }

    var trimmedBase: String { baseUrl.hasSuffix("/") ? String(baseUrl.dropLast()) : baseUrl }

    public var description: String { "GatewayEndpoint(\(url), site: \(siteReference), user: \(username))" }

    /// The endpoint of a merchant's gateway settings, or why there is none: a connector's account and secret must both
    /// be set. `site` (an attempt's stored site, entity or merchant id) replaces the configured one, so a status query
    /// goes where the attempt went.
    public static func forMerchant(_ gateway: MerchantConfig.Gateway?, secrets: MerchantSecrets?, site: String?) -> Result<GatewayEndpoint, ConnectorBuildError> {
        guard let gateway else { return .failure(.notConfigured("no gateway settings")) }
        switch gateway.connector {
        case .trustPayments:
            guard let username = gateway.username, !username.isEmpty, let secret = secrets?.connectorSecret(for: gateway), !secret.isEmpty else {
                return .failure(.notConfigured("no gateway settings or credentials for its transport"))
            }
            return .success(GatewayEndpoint(baseUrl: gateway.baseUrl, siteReference: site ?? gateway.siteReference, transport: gateway.resolvedTransport,
                                            username: username, secret: secret))
        case .opp:
            guard let entity = gateway.opp?.entityId, !entity.isEmpty, let token = secrets?.connectorSecret(for: gateway), !token.isEmpty else {
                return .failure(.notConfigured("no OPP entityId or access token"))
            }
            return .success(GatewayEndpoint(baseUrl: gateway.baseUrl, siteReference: site ?? entity, transport: .webservices, username: "",
                                            secret: token, connector: .opp))
        case .tapPay:
            guard let merchant = gateway.tapPay?.merchantId, !merchant.isEmpty, let key = secrets?.connectorSecret(for: gateway), !key.isEmpty else {
                return .failure(.notConfigured("no TapPay merchantId or partner key"))
            }
            return .success(GatewayEndpoint(baseUrl: gateway.baseUrl, siteReference: site ?? merchant, transport: .webservices, username: "",
                                            secret: key, connector: .tapPay))
        }
    }
}
