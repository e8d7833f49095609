/// An X.509 v3 extension to put into a certificate being built.
public struct CertificateExtension: Sendable {
    public var objectIdentifier: ASN1ObjectIdentifier
    public var isCritical: Bool
    /// The DER of the extension value (the contents of extnValue's OCTET STRING).
    public var valueDER: [UInt8]

    public init(_ objectIdentifier: ASN1ObjectIdentifier, critical: Bool = false, valueDER: [UInt8]) {
        self.objectIdentifier = objectIdentifier
        self.isCritical = critical
        self.valueDER = valueDER
    }

    /// basicConstraints (critical) with cA set or not.
    public static func basicConstraints(certificateAuthority: Bool) -> CertificateExtension {
        CertificateExtension(
            .basicConstraints, critical: true,
            valueDER: DERWriter.sequence(certificateAuthority ? [DERWriter.boolean(true)] : []))
    }
}
