/// A forward reader of BER/DER TLVs.
///
/// Accepts BER indefinite lengths on constructed elements because Apple's CMS signatures use them; everything else
/// is strict (minimal long-form lengths are not enforced, high tag numbers are rejected, nesting is bounded).
public struct DERReader: Sendable {
    private var remaining: ArraySlice<UInt8>
    private let depth: Int
    private static let maximumDepth = 32

    public init(_ bytes: ArraySlice<UInt8>) {
        self.init(bytes, depth: 0)
    }

    public init(_ bytes: [UInt8]) {
        self.init(bytes[...], depth: 0)
    }

    private init(_ bytes: ArraySlice<UInt8>, depth: Int) {
        self.remaining = bytes
        self.depth = depth
    }

    public var isAtEnd: Bool { remaining.isEmpty }

    /// Parses exactly one element spanning all of `bytes`.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(CryptoError) -> ASN1Element {
        var reader = DERReader(bytes)
        let element = try reader.read()
        guard reader.isAtEnd else { throw .decodingFailed("trailing bytes after ASN.1 element") }
        return element
    }

    public static func parse(_ bytes: [UInt8]) throws(CryptoError) -> ASN1Element {
        try parse(bytes[...])
    }

    /// Reads the next element. Nested elements of a definite-length element are checked when `children()` reads them.
    public mutating func read() throws(CryptoError) -> ASN1Element {
        guard depth < Self.maximumDepth else { throw .decodingFailed("ASN.1 nesting too deep") }
        let start = remaining.startIndex
        var cursor = start
        let end = remaining.endIndex
        guard cursor < end else { throw .decodingFailed("unexpected end of ASN.1 data") }
        let tag = remaining[cursor]
        guard tag & 0x1F != 0x1F else { throw .decodingFailed("high-tag-number form not supported") }
        cursor += 1
        guard cursor < end else { throw .decodingFailed("missing ASN.1 length") }
        let first = remaining[cursor]
        cursor += 1
        if first == 0x80 {
            guard tag & 0x20 != 0 else { throw .decodingFailed("indefinite length on a primitive element") }
            var inner = DERReader(remaining[cursor...], depth: depth + 1)
            while true {
                guard inner.remaining.count >= 2 else { throw .decodingFailed("missing end-of-contents") }
                let head = inner.remaining.startIndex
                if inner.remaining[head] == 0 && inner.remaining[head + 1] == 0 {
                    let contentEnd = head
                    let elementEnd = head + 2
                    let element = ASN1Element(
                        tag: tag, encoded: remaining[start..<elementEnd], content: remaining[cursor..<contentEnd],
                        isIndefiniteLength: true)
                    remaining = remaining[elementEnd...]
                    return element
                }
                _ = try inner.read()
            }
        }
        var length = 0
        if first & 0x80 == 0 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count <= 4, end - cursor >= count else { throw .decodingFailed("bad ASN.1 length") }
            for _ in 0..<count {
                length = (length << 8) | Int(remaining[cursor])
                cursor += 1
            }
        }
        guard end - cursor >= length else { throw .decodingFailed("ASN.1 length exceeds input") }
        let contentEnd = cursor + length
        let element = ASN1Element(
            tag: tag, encoded: remaining[start..<contentEnd], content: remaining[cursor..<contentEnd],
            isIndefiniteLength: false)
        remaining = remaining[contentEnd...]
        return element
    }
}
