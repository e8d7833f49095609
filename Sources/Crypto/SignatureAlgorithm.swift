/// Signature schemes used by certificates and CMS in PayPipe (always with SHA-256).
public enum SignatureAlgorithm: Sendable, Equatable {
    /// ECDSA over SHA-256, DER-encoded (r, s).
    case ecdsaSHA256
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    case rsaPKCS1SHA256

    /// The key family the scheme needs.
    public var keyType: KeyType {
        switch self {
        case .ecdsaSHA256: .ec
        case .rsaPKCS1SHA256: .rsa
        }
    }

    /// The AlgorithmIdentifier OID used in CMS SignerInfo and X.509.
    public var objectIdentifier: ASN1ObjectIdentifier {
        switch self {
        case .ecdsaSHA256: .ecdsaWithSHA256
        case .rsaPKCS1SHA256: .sha256WithRSAEncryption
        }
    }

    /// The scheme for a key family.
    public static func `for`(_ keyType: KeyType) -> SignatureAlgorithm {
        switch keyType {
        case .ec: .ecdsaSHA256
        case .rsa: .rsaPKCS1SHA256
        }
    }
}
