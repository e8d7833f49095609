import Crypto
import Foundation
import JSON

/// Verifies compact JWS tokens signed with an HMAC key and checks their time claims.
///
/// Order of checks, chosen so nothing from an unauthenticated token is trusted beyond what is needed to verify it:
/// shape → header (`alg` must be one of `algorithms`; `none` never is) → signature (constant time) → claims JSON →
/// time claims. Only the header JSON is parsed before the signature is known to be good.
public struct JWTVerifier: Sendable {
    private let key: [UInt8]
    public let algorithms: Set<JWTAlgorithm>
    /// Maximum age of `iat` in seconds; nil disables the check. When set, tokens without `iat` are rejected.
    public let maxAge: Int64?
    /// Tolerated clock difference in seconds for `iat` in the future, `exp` and `nbf`.
    public let clockSkew: Int64
    /// Reject tokens without `iat` even when no maximum age is configured.
    public let requireIssuedAt: Bool
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - algorithms: accepted `alg` values; pin the one your counterpart uses (e.g. HS256).
    ///   - maxAge: e.g. 15 * 60 for a 15-minute window on `iat`.
    ///   - now: the clock, injectable for tests.
    public init(
        key: [UInt8],
        algorithms: Set<JWTAlgorithm> = [.hs256],
        maxAge: Int64? = nil,
        clockSkew: Int64 = 60,
        requireIssuedAt: Bool = false,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.key = key
        self.algorithms = algorithms
        self.maxAge = maxAge
        self.clockSkew = clockSkew
        self.requireIssuedAt = requireIssuedAt
        self.now = now
    }

    public func verify(_ token: String) throws(JWTError) -> VerifiedJWT {
        let bytes = Array(token.utf8)
        let dots = bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }
        guard dots.count == 2 else { throw .malformed("expected three dot-separated segments") }
        let headerSegment = bytes[..<dots[0]]
        let payloadSegment = bytes[(dots[0] + 1)..<dots[1]]
        let signatureSegment = bytes[(dots[1] + 1)...]

        guard let headerJSON = Base64URL.decode(bytes: headerSegment) else { throw .malformed("header is not base64url") }
        let header = try JWTHeader(json: headerJSON)
        guard algorithms.contains(header.algorithm) else { throw .algorithmNotAllowed(header.algorithm) }

        guard let signature = Base64URL.decode(bytes: signatureSegment) else {
            throw .malformed("signature is not base64url")
        }
        let expected = HMAC.authenticationCode(
            header.algorithm.hmacAlgorithm, key: key, message: Array(bytes[..<dots[1]]))
        guard HMAC.isEqualConstantTime(signature, expected) else { throw .signatureInvalid }

        guard let payload = Base64URL.decode(bytes: payloadSegment) else { throw .malformed("payload is not base64url") }
        let claims: JSONValue
        do {
            claims = try JSONValue.parse(payload)
        } catch {
            throw .malformed("claims are not valid JSON (\(error))")
        }
        guard claims.objectValue != nil else { throw .malformed("claims are not a JSON object") }
        try checkTimes(claims)
        return VerifiedJWT(header: header, payload: payload, claims: claims)
    }

    private func checkTimes(_ claims: JSONValue) throws(JWTError) {
        let current = now().timeIntervalSince1970
        let issuedAt = try numericDate(claims, "iat")
        let expiresAt = try numericDate(claims, "exp")
        let notBefore = try numericDate(claims, "nbf")
        let skew = Double(clockSkew)

        if let expiresAt, current > expiresAt + skew {
            throw .expirationPassed(secondsAgo: Int64(current - expiresAt))
        }
        if let notBefore, current + skew < notBefore {
            throw .notYetValid(seconds: Int64(notBefore - current))
        }
        guard let issuedAt else {
            if requireIssuedAt || maxAge != nil { throw .missingIssuedAt }
            return
        }
        if issuedAt > current + skew {
            throw .issuedInFuture(seconds: Int64(issuedAt - current))
        }
        if let maxAge, current - issuedAt > Double(maxAge) {
            throw .expired(iatAge: Int64(current - issuedAt))
        }
    }

    /// A NumericDate claim (RFC 7519 §2: seconds, possibly fractional). Present but not a finite number is an error.
    private func numericDate(_ claims: JSONValue, _ name: String) throws(JWTError) -> Double? {
        guard let value = claims[name] else { return nil }
        guard let seconds = value.doubleValue, seconds.isFinite, abs(seconds) < 1e15 else {
            throw .malformed("\(name) is not a number of seconds")
        }
        return seconds
    }
}

extension JWTVerifier: CustomStringConvertible, CustomDebugStringConvertible {
    /// Never shows the key.
    public var description: String {
        "JWTVerifier(\(algorithms.map(\.rawValue).sorted().joined(separator: ",")), key: <redacted>)"
    }
    public var debugDescription: String { description }
}

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
