/// Strings bind with an unspecified type so the server infers it from context (text, varchar, uuid, enum, …),
/// and any column decodes as its text representation.
extension String: PostgresBindable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .unspecified }

    public func encodePostgresValue(into buffer: inout [UInt8]) -> Bool {
        buffer.append(contentsOf: utf8)
        return true
    }

    public static func decode(from cell: PostgresCell) throws(PostgresError) -> String {
        String(decoding: try cell.value(as: String.self, accepting: nil), as: UTF8.self)
    }
}
