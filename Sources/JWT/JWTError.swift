/// Why a JWT was not signed or accepted. Cases are stable so callers can map them (e.g. a gateway's 10300
/// "JWT decoding error" vs an expired token); descriptions never include the token, its claims or the key.
public enum JWTError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not a compact JWS, bad base64url, header/claims not a JSON object, bad `alg`/`iat`/`exp` types, `crit`.
    case malformed(String)
    /// `alg` is not HS256/HS384/HS512 — including `none`.
    case unsupportedAlgorithm(String)
    /// A supported algorithm this verifier was not configured to accept (algorithm-substitution defence).
    case algorithmNotAllowed(JWTAlgorithm)
    case signatureInvalid
    /// `iat` is required (maximum age configured, or `requireIssuedAt`) but absent.
    case missingIssuedAt
    /// `iat` is older than the configured maximum age; the age in whole seconds.
    case expired(iatAge: Int64)
    /// `iat` lies further in the future than the allowed clock skew; by how many seconds.
    case issuedInFuture(seconds: Int64)
    /// `exp` has passed (beyond the allowed clock skew); how many seconds ago.
    case expirationPassed(secondsAgo: Int64)
    /// `nbf` is still in the future (beyond the allowed clock skew); in how many seconds.
    case notYetValid(seconds: Int64)

    public var description: String {
        switch self {
        case .malformed(let reason): "malformed JWT: \(reason)"
        case .unsupportedAlgorithm(let name): "unsupported JWT algorithm \"\(name.prefix(16))\""
        case .algorithmNotAllowed(let algorithm): "JWT algorithm \(algorithm.rawValue) is not allowed here"
        case .signatureInvalid: "JWT signature does not verify"
        case .missingIssuedAt: "JWT has no iat claim"
        case .expired(let age): "JWT is too old (issued \(age) s ago)"
        case .issuedInFuture(let seconds): "JWT issued \(seconds) s in the future"
        case .expirationPassed(let seconds): "JWT expired \(seconds) s ago"
        case .notYetValid(let seconds): "JWT not valid for another \(seconds) s"
        }
    }
}
