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

    /// Parses the server's text form (`8-4-4-4-12` hex digits) from the cell's bytes; `UUID(uuidString:)`, which scans
    /// with `sscanf` and needs a `String` first, only reads what is not in that form.
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> UUID {
        let bytes = try cell.value(as: UUID.self, accepting: [.uuid])
        guard let uuid = parse(bytes) ?? UUID(uuidString: String(decoding: bytes, as: UTF8.self)) else {
            throw cell.failure(as: UUID.self, "the text is not a UUID")
        }
        return uuid
    }

    private static func parse(_ text: ArraySlice<UInt8>) -> UUID? {
        guard text.count == 36 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var index = text.startIndex
        while index < text.endIndex, bytes.count < 16 {
            switch index - text.startIndex {
            case 8, 13, 18, 23:
                guard text[index] == UInt8(ascii: "-") else { return nil }
                index += 1
            default: break
            }
            guard let high = PostgresHex.value(of: text[index]), let low = PostgresHex.value(of: text[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        guard bytes.count == 16 else { return nil }
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
