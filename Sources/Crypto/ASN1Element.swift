/// One BER/DER TLV, referencing the bytes it was read from.
///
/// Kept as slices of the input so that callers can hash or re-tag exact encodings (CMS signs the DER of the signed
/// attributes, certificates are compared by their encoding) without re-serialising anything.
public struct ASN1Element: Sendable {
    /// The identifier octet (class, constructed bit and tag number < 31).
    public let tag: UInt8
    /// The whole TLV, including the end-of-contents octets of an indefinite-length encoding.
    public let encoded: ArraySlice<UInt8>
    /// The contents octets (for indefinite lengths: everything between the header and the end-of-contents marker).
    public let content: ArraySlice<UInt8>
    /// Whether the element used BER's indefinite-length form.
    public let isIndefiniteLength: Bool

    public var isConstructed: Bool { tag & 0x20 != 0 }

    /// The nested elements of a constructed element.
    public func children() throws(CryptoError) -> [ASN1Element] {
        guard isConstructed else { throw .decodingFailed("primitive ASN.1 element has no children") }
        var reader = DERReader(content)
        var result: [ASN1Element] = []
        // One allocation for the typical CMS/X.509 node (up to 6 fields) instead of growing 1 → 2 → 4 → 8.
        result.reserveCapacity(6)
        while !reader.isAtEnd { result.append(try reader.read()) }
        return result
    }

    /// Throws unless the tag is `expected`.
    @discardableResult
    public func expecting(tag expected: UInt8, _ what: String) throws(CryptoError) -> ASN1Element {
        guard tag == expected else { throw .decodingFailed("\(what): expected tag 0x\(String(expected, radix: 16)), got 0x\(String(tag, radix: 16))") }
        return self
    }

    /// The value of an OBJECT IDENTIFIER.
    public func objectIdentifier() throws(CryptoError) -> ASN1ObjectIdentifier {
        ASN1ObjectIdentifier(contentBytes: Array(try objectIdentifierContent()))
    }

    /// The content octets of a well-formed OBJECT IDENTIFIER, without allocating an `ASN1ObjectIdentifier`.
    public func objectIdentifierContent() throws(CryptoError) -> ArraySlice<UInt8> {
        try expecting(tag: ASN1Tag.objectIdentifier, "OBJECT IDENTIFIER")
        guard !content.isEmpty, content.last! & 0x80 == 0 else { throw .decodingFailed("malformed OBJECT IDENTIFIER") }
        return content
    }

    /// Whether this is the OBJECT IDENTIFIER `oid` (false for any other element, malformed ones included).
    public func isObjectIdentifier(_ oid: ASN1ObjectIdentifier) -> Bool {
        tag == ASN1Tag.objectIdentifier && content.elementsEqual(oid.contentBytes)
    }

    /// The contents of a primitive OCTET STRING.
    public func octetString() throws(CryptoError) -> ArraySlice<UInt8> {
        try expecting(tag: ASN1Tag.octetString, "OCTET STRING")
        return content
    }

    /// A small non-negative INTEGER.
    public func smallInteger() throws(CryptoError) -> Int {
        try expecting(tag: ASN1Tag.integer, "INTEGER")
        guard !content.isEmpty, content.count <= 4, content.first! & 0x80 == 0 else { throw .decodingFailed("INTEGER out of range") }
        return content.reduce(0) { ($0 << 8) | Int($1) }
    }

    /// A UTCTime or GeneralizedTime as seconds since 1970.
    public func time() throws(CryptoError) -> ASN1Time {
        switch tag {
        case ASN1Tag.utcTime: return try ASN1Time(utcTime: content)
        case ASN1Tag.generalizedTime: return try ASN1Time(generalizedTime: content)
        default: throw .decodingFailed("expected a time, got tag 0x\(String(tag, radix: 16))")
        }
    }
}

/// Identifier octets used by the certificate and CMS code.
public enum ASN1Tag {
    public static let boolean: UInt8 = 0x01
    public static let integer: UInt8 = 0x02
    public static let bitString: UInt8 = 0x03
    public static let octetString: UInt8 = 0x04
    public static let null: UInt8 = 0x05
    public static let objectIdentifier: UInt8 = 0x06
    public static let utf8String: UInt8 = 0x0C
    public static let printableString: UInt8 = 0x13
    public static let ia5String: UInt8 = 0x16
    public static let utcTime: UInt8 = 0x17
    public static let generalizedTime: UInt8 = 0x18
    public static let sequence: UInt8 = 0x30
    public static let set: UInt8 = 0x31

    /// `[number]` context-specific, constructed (EXPLICIT or IMPLICIT over a constructed type).
    public static func contextConstructed(_ number: UInt8) -> UInt8 { 0xA0 | number }
    /// `[number]` context-specific, primitive (IMPLICIT over a primitive type).
    public static func contextPrimitive(_ number: UInt8) -> UInt8 { 0x80 | number }
}
