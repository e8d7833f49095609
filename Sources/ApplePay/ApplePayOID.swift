import Crypto

/// Apple's certificate extension OIDs (applepay-token.md §2, §3). Public for the fuzz harness (FuzzTargets).
public enum ApplePayOID {
    /// Marks the leaf that signs payment tokens.
    public static let leafMarker = ASN1ObjectIdentifier("1.2.840.113635.100.6.29")
    /// Marks Apple Application Integration CA - G3, the intermediate.
    public static let intermediateMarker = ASN1ObjectIdentifier("1.2.840.113635.100.6.2.14")
    /// On the merchant payment-processing certificate: UTF8String of hex SHA-256(merchant identifier).
    public static let merchantIdentifier = ASN1ObjectIdentifier("1.2.840.113635.100.6.32")
}
