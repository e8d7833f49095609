import Crypto
import JSON

/// Produces compact JWS tokens (`header.payload.signature`) with an HMAC key.
///
/// The payload is signed exactly as given, so the caller controls serialisation (use `JSONValue` for
/// deterministic claims). RFC 7518 §3.2 asks for a key at least as long as the hash output (32 bytes for HS256);
/// that is not enforced because gateway-issued secrets are what they are.
public struct JWTSigner: Sendable {
    public let header: JWTHeader
    private let key: [UInt8]
    /// `base64url(header) + "."`, computed once.
    private let signingInputPrefix: [UInt8]

    public init(header: JWTHeader, key: [UInt8]) {
        self.header = header
        self.key = key
        self.signingInputPrefix = Base64URL.encodedBytes(header.json) + [UInt8(ascii: ".")]
    }

    /// Signs with the standard header `{"alg":"HS256","typ":"JWT"}` (for `.hs256`).
    public init(algorithm: JWTAlgorithm, key: [UInt8]) {
        self.init(header: JWTHeader(algorithm: algorithm), key: key)
    }

    /// The compact JWS of `payload` (raw claim bytes, typically JSON).
    public func sign(payload: [UInt8]) -> String {
        var token = signingInputPrefix
        token.reserveCapacity(signingInputPrefix.count + payload.count * 4 / 3 + 90)
        token.append(contentsOf: Base64URL.encodedBytes(payload))
        let signature = HMAC.authenticationCode(header.algorithm.hmacAlgorithm, key: key, message: token)
        token.append(UInt8(ascii: "."))
        token.append(contentsOf: Base64URL.encodedBytes(signature))
        return String(decoding: token, as: UTF8.self)
    }

    /// Signs `claims.serialized()`.
    public func sign(_ claims: JSONValue) -> String {
        sign(payload: claims.serialized())
    }
}

extension JWTSigner: CustomStringConvertible, CustomDebugStringConvertible {
    /// Never shows the key.
    public var description: String { "JWTSigner(\(header.algorithm.rawValue), key: <redacted>)" }
    public var debugDescription: String { description }
}
