/// nil binds as SQL NULL (declared with the wrapped type, so the statement plans the same either way) and a
/// NULL column decodes as nil.
extension Optional: PostgresBindable where Wrapped: PostgresBindable {
    public static var postgresDataType: PostgresDataType { Wrapped.postgresDataType }
    public static var postgresFormat: PostgresFormat { Wrapped.postgresFormat }

    public func encodePostgresValue(into buffer: inout [UInt8]) -> Bool {
        switch self {
        case .none: false
        case .some(let value): value.encodePostgresValue(into: &buffer)
        }
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Wrapped? {
        guard cell.bytes != nil else { return nil }
        return try Wrapped.decode(from: cell)
    }
}
