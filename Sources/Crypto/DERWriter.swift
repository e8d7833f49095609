/// Builds DER encodings from parts. Used to create certificate extensions and CMS structures for sandbox tokens.
public enum DERWriter {
    /// One TLV with a definite, minimal length.
    public static func element(tag: UInt8, content: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [tag]
        let length = content.count
        if length < 0x80 {
            out.append(UInt8(length))
        } else {
            var lengthBytes: [UInt8] = []
            var rest = length
            while rest > 0 {
                lengthBytes.insert(UInt8(rest & 0xFF), at: 0)
                rest >>= 8
            }
            out.append(0x80 | UInt8(lengthBytes.count))
            out.append(contentsOf: lengthBytes)
        }
        out.append(contentsOf: content)
        return out
    }

    public static func sequence(_ parts: [[UInt8]]) -> [UInt8] {
        element(tag: ASN1Tag.sequence, content: parts.flatMap { $0 })
    }

    /// A DER SET OF: members sorted by their encodings (X.690 §11.6).
    public static func setOf(_ members: [[UInt8]]) -> [UInt8] {
        element(tag: ASN1Tag.set, content: members.sorted { $0.lexicographicallyPrecedes($1) }.flatMap { $0 })
    }

    public static func objectIdentifier(_ oid: ASN1ObjectIdentifier) -> [UInt8] {
        element(tag: ASN1Tag.objectIdentifier, content: oid.contentBytes)
    }

    /// A non-negative INTEGER from big-endian magnitude bytes (leading zeros trimmed, sign byte added when needed).
    public static func integer(magnitude: [UInt8]) -> [UInt8] {
        var bytes = Array(magnitude.drop { $0 == 0 })
        if bytes.isEmpty { bytes = [0] }
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return element(tag: ASN1Tag.integer, content: bytes)
    }

    public static func integer(_ value: Int) -> [UInt8] {
        precondition(value >= 0)
        var bytes: [UInt8] = []
        var rest = value
        repeat {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        } while rest > 0
        return integer(magnitude: bytes)
    }

    public static func octetString(_ bytes: [UInt8]) -> [UInt8] {
        element(tag: ASN1Tag.octetString, content: bytes)
    }

    public static func utf8String(_ string: String) -> [UInt8] {
        element(tag: ASN1Tag.utf8String, content: Array(string.utf8))
    }

    public static func boolean(_ value: Bool) -> [UInt8] {
        element(tag: ASN1Tag.boolean, content: [value ? 0xFF : 0x00])
    }

    public static let null: [UInt8] = [ASN1Tag.null, 0x00]

    /// A BIT STRING with no unused bits.
    public static func bitString(_ bytes: [UInt8]) -> [UInt8] {
        element(tag: ASN1Tag.bitString, content: [0] + bytes)
    }

    /// `[number]` constructed context-specific wrapper (EXPLICIT tagging, or IMPLICIT over SET/SEQUENCE contents).
    public static func contextConstructed(_ number: UInt8, _ parts: [[UInt8]]) -> [UInt8] {
        element(tag: ASN1Tag.contextConstructed(number), content: parts.flatMap { $0 })
    }

    /// AlgorithmIdentifier with an optional NULL parameter.
    public static func algorithmIdentifier(_ oid: ASN1ObjectIdentifier, nullParameters: Bool) -> [UInt8] {
        sequence(nullParameters ? [objectIdentifier(oid), null] : [objectIdentifier(oid)])
    }
}
