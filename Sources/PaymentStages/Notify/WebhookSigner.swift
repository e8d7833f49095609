import Crypto
import Foundation

/// Standard Webhooks symmetric signatures (spec v1.0.0 §"Signature scheme"): `v1,<base64(HMAC-SHA256(key,
/// "{id}.{timestamp}.{body}"))>`, the key being the base64-decoded part of a `whsec_…` secret.
///
/// Pure and cheap, so the stage signs each attempt with a fresh timestamp. With several secrets (a rotation in
/// progress) the header carries one space-separated signature per secret, so receivers holding either secret verify.
public struct WebhookSigner: Sendable {
    public static let secretPrefix = "whsec_"
    let keys: [[UInt8]]

    /// - Parameter secrets: `whsec_<base64>` secrets, newest first. At least one is required.
    public init(secrets: [String]) throws(WebhookSignerError) {
        guard !secrets.isEmpty else { throw .noSecret }
        var keys: [[UInt8]] = []
        for (index, secret) in secrets.enumerated() {
            keys.append(try Self.key(of: secret, index: index))
        }
        self.keys = keys
    }

    /// The HMAC key of one `whsec_` secret. The prefix is optional on input, as in the reference libraries. Public for
    /// the receiving side (`WebhookVerifier`, a development tool).
    public static func key(of secret: String, index: Int) throws(WebhookSignerError) -> [UInt8] {
        let encoded = secret.hasPrefix(secretPrefix) ? String(secret.dropFirst(secretPrefix.count)) : secret
        guard let key = Data(base64Encoded: encoded), !key.isEmpty else { throw .invalidSecret(index: index) }
        return Array(key)
    }

    /// The bytes that are signed: `{id}.{timestamp}.{body}`.
    public static func signedContent(id: String, timestamp: Int64, body: [UInt8]) -> [UInt8] {
        Array("\(id).\(timestamp).".utf8) + body
    }

    /// The `webhook-signature` header value: `v1,<sig>` per secret, space-separated.
    public func signature(id: String, timestamp: Int64, body: [UInt8]) -> String {
        let content = Self.signedContent(id: id, timestamp: timestamp, body: body)
        return keys.map { key in
            "v1," + Data(HMAC.authenticationCode(.sha256, key: key, message: content)).base64EncodedString()
        }.joined(separator: " ")
    }

    /// The three Standard Webhooks headers for one attempt, as (name, value) pairs.
    public func headers(id: String, timestamp: Int64, body: [UInt8]) -> [(name: String, value: String)] {
        [("webhook-id", id), ("webhook-timestamp", String(timestamp)), ("webhook-signature", signature(id: id, timestamp: timestamp, body: body))]
    }
}

/// Why a webhook secret or signature was refused. Descriptions never contain the secret itself.
public enum WebhookSignerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not `whsec_<base64>`, or its key is empty. `index` is the position in the merchant's secret list.
    case invalidSecret(index: Int)
    /// The merchant has no webhook secret configured.
    case noSecret
    case missingHeader(String)
    case invalidTimestamp
    case timestampTooOld
    case timestampTooNew
    /// No `v1` entry of `webhook-signature` matched.
    case noMatchingSignature

    public var description: String {
        switch self {
        case .invalidSecret(let index): "webhook secret #\(index) is not of the form whsec_<base64>"
        case .noSecret: "no webhook secret configured"
        case .missingHeader(let name): "missing header \(name)"
        case .invalidTimestamp: "webhook-timestamp is not an integer"
        case .timestampTooOld: "webhook-timestamp is too old"
        case .timestampTooNew: "webhook-timestamp is too far in the future"
        case .noMatchingSignature: "no matching v1 signature"
        }
    }
}

/// What a stored webhook secret must be: `whsec_` followed by standard base64 of 24-64 bytes. Fewer than 24 bytes
/// (192 bits) is a weak HMAC key; more than 64 bytes exceeds SHA-256's block and is hashed down anyway, which usually
/// means a secret pasted from somewhere else. Enforced by `paypipe merchant apply` and again by notify before it
/// signs, for secrets stored before the rule. A pure check; its answer never contains the secret.
public enum WebhookSecretPolicy {
    public static let keyByteRange = 24...64

    /// Why `secret` is refused, or nil when it is acceptable.
    public static func problem(_ secret: String) -> String? {
        guard secret.hasPrefix(WebhookSigner.secretPrefix) else {
            return "must start with \(WebhookSigner.secretPrefix)"
        }
        guard let key = Data(base64Encoded: String(secret.dropFirst(WebhookSigner.secretPrefix.count))) else {
            return "must be \(WebhookSigner.secretPrefix) followed by standard padded base64"
        }
        guard keyByteRange.contains(key.count) else {
            return "must encode \(keyByteRange.lowerBound)-\(keyByteRange.upperBound) bytes, not \(key.count)"
        }
        return nil
    }
}
