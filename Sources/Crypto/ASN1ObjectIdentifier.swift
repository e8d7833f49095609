/// An ASN.1 OBJECT IDENTIFIER, kept as its DER content octets so comparisons are byte comparisons.
public struct ASN1ObjectIdentifier: Hashable, Sendable, CustomStringConvertible {
    /// The DER content octets (without tag and length).
    public let contentBytes: [UInt8]

    /// Parses dotted notation ("1.2.840.113635.100.6.29"). Traps on malformed literals: OIDs are program constants.
    public init(_ dotted: String) {
        let arcs = dotted.split(separator: ".").map { UInt64($0)! }
        precondition(arcs.count >= 2 && arcs[0] <= 2, "malformed OID literal \(dotted)")
        var bytes: [UInt8] = []
        func append(_ value: UInt64) {
            var groups: [UInt8] = [UInt8(value & 0x7F)]
            var rest = value >> 7
            while rest > 0 {
                groups.append(UInt8(rest & 0x7F) | 0x80)
                rest >>= 7
            }
            bytes.append(contentsOf: groups.reversed())
        }
        append(arcs[0] * 40 + arcs[1])
        for arc in arcs.dropFirst(2) { append(arc) }
        self.contentBytes = bytes
    }

    /// Wraps already-encoded content octets.
    public init(contentBytes: [UInt8]) {
        self.contentBytes = contentBytes
    }

    /// Dotted notation, for diagnostics.
    public var description: String {
        var arcs: [UInt64] = []
        var value: UInt64 = 0
        for byte in contentBytes {
            value = (value << 7) | UInt64(byte & 0x7F)
            if byte & 0x80 == 0 {
                if arcs.isEmpty {
                    let first = min(value / 40, 2)
                    arcs.append(first)
                    arcs.append(value - first * 40)
                } else {
                    arcs.append(value)
                }
                value = 0
            }
        }
        return arcs.map(String.init).joined(separator: ".")
    }
}

extension ASN1ObjectIdentifier {
    public static let sha256 = ASN1ObjectIdentifier("2.16.840.1.101.3.4.2.1")
    public static let ecdsaWithSHA256 = ASN1ObjectIdentifier("1.2.840.10045.4.3.2")
    public static let rsaEncryption = ASN1ObjectIdentifier("1.2.840.113549.1.1.1")
    public static let sha256WithRSAEncryption = ASN1ObjectIdentifier("1.2.840.113549.1.1.11")
    public static let ecPublicKey = ASN1ObjectIdentifier("1.2.840.10045.2.1")
    public static let prime256v1 = ASN1ObjectIdentifier("1.2.840.10045.3.1.7")
    public static let pkcs7Data = ASN1ObjectIdentifier("1.2.840.113549.1.7.1")
    public static let pkcs7SignedData = ASN1ObjectIdentifier("1.2.840.113549.1.7.2")
    public static let contentType = ASN1ObjectIdentifier("1.2.840.113549.1.9.3")
    public static let messageDigest = ASN1ObjectIdentifier("1.2.840.113549.1.9.4")
    public static let signingTime = ASN1ObjectIdentifier("1.2.840.113549.1.9.5")
    public static let basicConstraints = ASN1ObjectIdentifier("2.5.29.19")
    public static let keyUsage = ASN1ObjectIdentifier("2.5.29.15")
    public static let commonName = ASN1ObjectIdentifier("2.5.4.3")
}
