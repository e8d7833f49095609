import Foundation

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
