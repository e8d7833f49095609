/// One HTTP header field.
///
/// Headers travel as an ordered array rather than a dictionary: order and repetition are meaningful on the wire
/// (repeated fields, gateways that log or sign headers in order), and a dictionary would silently merge them.
public struct HTTPHeader: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    public init(_ name: String, _ value: String) {
        self.init(name: name, value: value)
    }

    /// Whether this field's name equals `other` under ASCII case folding (RFC 9110 §5.1: names are case-insensitive).
    /// Compares UTF-8 bytes directly so lookups do not allocate lowercased copies.
    public func hasName(_ other: String) -> Bool {
        var lhs = name.utf8.makeIterator()
        var rhs = other.utf8.makeIterator()
        while true {
            switch (lhs.next(), rhs.next()) {
            case (nil, nil):
                return true
            case let (left?, right?) where Self.asciiLowercased(left) == Self.asciiLowercased(right):
                continue
            default:
                return false
            }
        }
    }

    /// Whether name and value can be written on an HTTP/1.1 wire without enabling header injection: the name must
    /// be a non-empty RFC 9110 token and the value must not contain CR, LF or NUL.
    package var isWireSafe: Bool {
        !name.isEmpty
            && name.utf8.allSatisfy(Self.isTokenCharacter)
            && !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 })
    }

    /// RFC 9110 `tchar`.
    package static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }
}

extension Array where Element == HTTPHeader {
    /// The value of the first field named `name` (case-insensitive), or nil.
    public func value(for name: String) -> String? {
        first(where: { $0.hasName(name) })?.value
    }

    /// Every value of fields named `name` (case-insensitive), in wire order.
    public func values(for name: String) -> [String] {
        filter { $0.hasName(name) }.map(\.value)
    }

    /// Whether any field is named `name` (case-insensitive).
    public func contains(name: String) -> Bool {
        contains(where: { $0.hasName(name) })
    }
}

/// One raw header line of an HTTP response as libcurl hands it over, parsed: the peer's bytes, so any sequence must
/// parse without trapping (fuzzed: Sources/FuzzTargets, surface `webhookResponse`).
public enum HTTPHeaderLine: Equatable, Sendable {
    /// `HTTP/…`: a new response starts (an interim 1xx, or the next redirect hop).
    case statusLine
    case field(HTTPHeader)
    /// No colon (the blank line ending the block, or garbage): nothing to keep.
    case ignored

    public static func parse(_ line: some Collection<UInt8>) -> HTTPHeaderLine {
        var bytes = Array(line)[...]
        while let last = bytes.last, last == UInt8(ascii: "\r") || last == UInt8(ascii: "\n") {
            bytes = bytes.dropLast()
        }
        if bytes.starts(with: "HTTP/".utf8) { return .statusLine }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return .ignored }
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var value = bytes[(colon + 1)...]
        while let first = value.first, isSpace(first) { value = value.dropFirst() }
        while let last = value.last, isSpace(last) { value = value.dropLast() }
        return .field(HTTPHeader(name: String(decoding: bytes[..<colon], as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
    }
}
