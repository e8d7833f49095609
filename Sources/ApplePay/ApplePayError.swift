/// Why a token was rejected, classified into stable machine-readable codes.
///
/// The codes are a contract with the pipeline (they end up in payment records and notifications). Messages say
/// what failed, never which key, PAN or cryptogram was involved.
public enum ApplePayError: Error, CustomStringConvertible, Equatable, Sendable {
    /// Not a token: invalid JSON, missing fields, bad base64/hex, unusable ephemeral key.
    case malformedToken(String)
    /// `version` is neither EC_v1 nor RSA_v1.
    case unsupportedVersion(String)
    /// The CMS signature is structurally wrong or does not verify (messageDigest, signer signature, algorithm).
    case signatureInvalid(String)
    /// Marker OIDs missing, chain does not lead to the trust root, or a certificate was not valid at signing time.
    case certificateInvalid(String)
    /// The signing time is outside the accepted window around the verification clock.
    case signingTimeOutOfRange(String)
    /// No configured identity has the token's `publicKeyHash` (or its key type does not fit the token version).
    case unknownMerchantKey(String)
    /// Key agreement/unwrap or AES-GCM authentication failed.
    case decryptionFailed(String)
    /// The decrypted payload is not the expected JSON.
    case payloadInvalid(String)
    /// A merchant certificate/key pair given to the keyring is unusable.
    case merchantIdentityInvalid(String)

    /// The stable code.
    public var code: String {
        switch self {
        case .malformedToken: "malformed_token"
        case .unsupportedVersion: "unsupported_version"
        case .signatureInvalid: "signature_invalid"
        case .certificateInvalid: "certificate_invalid"
        case .signingTimeOutOfRange: "signing_time_out_of_range"
        case .unknownMerchantKey: "unknown_merchant_key"
        case .decryptionFailed: "decryption_failed"
        case .payloadInvalid: "payload_invalid"
        case .merchantIdentityInvalid: "merchant_identity_invalid"
        }
    }

    /// The human-readable reason (free of secrets).
    public var message: String {
        switch self {
        case .malformedToken(let m), .unsupportedVersion(let m), .signatureInvalid(let m), .certificateInvalid(let m),
            .signingTimeOutOfRange(let m), .unknownMerchantKey(let m), .decryptionFailed(let m), .payloadInvalid(let m),
            .merchantIdentityInvalid(let m):
            m
        }
    }

    public var description: String { "\(code): \(message)" }
}
