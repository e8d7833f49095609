extension Bool: PostgresBindable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .bool }

    public func encodePostgresValue(into buffer: inout [UInt8]) -> Bool {
        buffer.append(self ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        return true
    }

    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Bool {
        let bytes = try cell.value(as: Bool.self, accepting: [.bool])
        switch bytes.first {
        case UInt8(ascii: "t") where bytes.count == 1: return true
        case UInt8(ascii: "f") where bytes.count == 1: return false
        default: throw cell.failure(as: Bool.self, "bool text is neither 't' nor 'f'")
        }
    }
}
