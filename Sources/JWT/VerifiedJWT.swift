import JSON

/// A token whose signature and time claims have been checked by `JWTVerifier`.
public struct VerifiedJWT: Sendable {
    public let header: JWTHeader
    /// The exact signed claim bytes (for archiving, or re-parsing with a different model).
    public let payload: [UInt8]
    /// `payload` parsed; always a JSON object.
    public let claims: JSONValue

    /// `iat` in seconds since the Unix epoch, when present.
    public var issuedAt: Double? { claims["iat"]?.doubleValue }
    /// `iss`, when present and a string.
    public var issuer: String? { claims["iss"]?.stringValue }
}

extension VerifiedJWT: CustomStringConvertible, CustomDebugStringConvertible {
    /// Algorithm and size only: claims can carry card data (`pan` in a request JWT) or references.
    public var description: String {
        "VerifiedJWT(\(header.algorithm.rawValue), \(payload.count)-byte claims)"
    }
    public var debugDescription: String { description }
}
