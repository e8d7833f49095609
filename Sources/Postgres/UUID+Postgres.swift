import Foundation

extension UUID: PostgresBindable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .uuid }

    /// PostgreSQL's own text form (lowercase `8-4-4-4-12`), written from the bytes: `uuidString` formats with
    /// `snprintf`, which cost more than the rest of binding a batch's ids.
    public func encodePostgresValue(into buffer: inout [UInt8]) -> Bool {
        withUnsafeBytes(of: uuid) { bytes in
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { buffer.append(UInt8(ascii: "-")) }
                buffer.append(PostgresHex.lowercaseDigits[Int(byte >> 4)])
                buffer.append(PostgresHex.lowercaseDigits[Int(byte & 0x0F)])
            }
        }
        return true
    }

    /// Parses the server's text form (`8-4-4-4-12` hex digits) from the cell's bytes; `UUID(uuidString:)` scans with
    /// `sscanf` and needs a `String` first.
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> UUID {
        let bytes = try cell.value(as: UUID.self, accepting: [.uuid])
        guard let uuid = parse(bytes) else {
            throw cell.failure(as: UUID.self, "the text is not a UUID")
        }
        return uuid
    }

    private static func parse(_ text: some Collection<UInt8>) -> UUID? {
        guard text.count == 36 else { return nil }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &value) { out -> Bool in
            var byte = 0, high: UInt8?
            for (offset, character) in text.enumerated() {
                if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                    guard character == UInt8(ascii: "-") else { return false }
                    continue
                }
                guard let nibble = PostgresHex.value(of: character) else { return false }
                if let first = high {
                    out[byte] = first << 4 | nibble
                    byte += 1
                    high = nil
                } else {
                    high = nibble
                }
            }
            return byte == 16
        }
        return parsed ? UUID(uuid: value) : nil
    }
}
