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
    var isWireSafe: Bool {
        !name.isEmpty
            && name.utf8.allSatisfy(Self.isTokenCharacter)
            && !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 })
    }

    /// RFC 9110 `tchar`.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
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
