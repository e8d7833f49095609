/// Failures of the OpenSSL-backed primitives.
///
/// Descriptions name the operation and OpenSSL's reason string only: they never include key material,
/// plaintexts or other caller-supplied bytes, so they are safe to log.
public enum CryptoError: Error, CustomStringConvertible, Equatable, Sendable {
    /// Caller-supplied parameters are unusable (wrong key length, empty IV, …).
    case invalidInput(String)
    /// PEM/DER/ASN.1 input could not be decoded.
    case decodingFailed(String)
    /// An AEAD tag or signature did not verify.
    case authenticationFailed
    /// An OpenSSL call failed; `reason` is OpenSSL's own error string.
    case operationFailed(operation: String, reason: String)
    /// X.509 path validation failed; `reason` is the verification error.
    case certificateVerificationFailed(String)

    public var description: String {
        switch self {
        case .invalidInput(let what): "invalid input: \(what)"
        case .decodingFailed(let what): "decoding failed: \(what)"
        case .authenticationFailed: "authentication failed"
        case .operationFailed(let operation, let reason): "\(operation) failed: \(reason)"
        case .certificateVerificationFailed(let reason): "certificate verification failed: \(reason)"
        }
    }
}
