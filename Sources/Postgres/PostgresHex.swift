/// Hex digits for bytea and uuid text and URL percent-encoding.
enum PostgresHex {
    static let uppercaseDigits: [UInt8] = Array("0123456789ABCDEF".utf8)
    static let lowercaseDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// The value of one ASCII hex digit (either case), nil for anything else.
    static func value(of byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
