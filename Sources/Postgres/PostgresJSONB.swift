/// A JSON document bound as `jsonb` (or read from a `json`/`jsonb` column), kept as its text.
///
/// A distinct wrapper rather than `String` so that the parameter is declared `jsonb` and the server validates it.
public struct PostgresJSONB: Sendable, Hashable, PostgresBindable, PostgresDecodable {
    public var text: String

    public init(_ text: String) {
        self.text = text
    }

    public static var postgresDataType: PostgresDataType { .jsonb }

    public func encodePostgresValue(into buffer: inout [UInt8]) -> Bool {
        buffer.append(contentsOf: text.utf8)
        return true
    }

    public static func decode(from cell: PostgresCell) throws(PostgresError) -> PostgresJSONB {
        let bytes = try cell.value(as: Self.self, accepting: [.json, .jsonb])
        return PostgresJSONB(String(decoding: bytes, as: UTF8.self))
    }
}
