/// `[UInt8]` is bytea: bound in binary format (raw bytes, zero bytes included) and decoded from the hex text
/// output (`\x0a1b…`) that every PayPipe session selects with `bytea_output=hex`.
extension Array: PostgresBindable where Element == UInt8 {
    public static var postgresDataType: PostgresDataType { .bytea }
    public static var postgresFormat: PostgresFormat { .binary }

    public func encodePostgresValue(into buffer: inout [UInt8]) -> Bool {
        buffer.append(contentsOf: self)
        return true
    }
}

extension Array: PostgresDecodable where Element == UInt8 {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> [UInt8] {
        let text = try cell.value(as: [UInt8].self, accepting: [.bytea])
        guard text.count >= 2, text.count % 2 == 0, text.first == UInt8(ascii: "\\"),
              text[text.startIndex + 1] == UInt8(ascii: "x")
        else {
            throw cell.failure(as: [UInt8].self, "bytea text is not in hex format (\\x…)")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((text.count - 2) / 2)
        var index = text.startIndex + 2
        while index < text.endIndex {
            guard let high = PostgresHex.value(of: text[index]), let low = PostgresHex.value(of: text[index + 1]) else {
                throw cell.failure(as: [UInt8].self, "bytea text contains a non-hex digit")
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

}
