import Foundation

extension UUID: PostgresBindable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .uuid }

    public func encodePostgresValue(into buffer: inout [UInt8]) -> Bool {
        buffer.append(contentsOf: uuidString.utf8)
        return true
    }

    public static func decode(from cell: PostgresCell) throws(PostgresError) -> UUID {
        let bytes = try cell.value(as: UUID.self, accepting: [.uuid])
        guard let uuid = UUID(uuidString: String(decoding: bytes, as: UTF8.self)) else {
            throw cell.failure(as: UUID.self, "the text is not a UUID")
        }
        return uuid
    }
}
