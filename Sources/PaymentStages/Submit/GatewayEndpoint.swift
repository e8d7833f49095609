/// Where and as whom a merchant's requests go: its gateway settings plus the JWT secret, which both signs the
/// requests and verifies the answers. The description never shows the secret.
public struct GatewayEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// e.g. `https://webservices.securetrading.net`; requests go to `{baseUrl}/jwt/`.
    public let baseUrl: String
    public let siteReference: String
    public let jwtUsername: String
    let secret: String

    public init(baseUrl: String, siteReference: String, jwtUsername: String, secret: String) {
        self.baseUrl = baseUrl
        self.siteReference = siteReference
        self.jwtUsername = jwtUsername
        self.secret = secret
    }

    /// The `/jwt/` URL, tolerating a base URL written with or without a trailing slash.
    public var jwtURL: String {
        (baseUrl.hasSuffix("/") ? String(baseUrl.dropLast()) : baseUrl) + "/jwt/"
    }

    public var description: String { "GatewayEndpoint(\(jwtURL), site: \(siteReference), user: \(jwtUsername))" }
}
