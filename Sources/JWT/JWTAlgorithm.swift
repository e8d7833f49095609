import Crypto

/// The JWS algorithms PayPipe accepts: HMAC only (payment gateways sign request and response JWTs with a shared
/// secret). `none` and asymmetric algorithms are deliberately absent, so they cannot be selected by a token.
public enum JWTAlgorithm: String, Sendable, Hashable, CaseIterable {
    case hs256 = "HS256"
    case hs384 = "HS384"
    case hs512 = "HS512"

    public var hmacAlgorithm: HMACAlgorithm {
        switch self {
        case .hs256: .sha256
        case .hs384: .sha384
        case .hs512: .sha512
        }
    }
}
