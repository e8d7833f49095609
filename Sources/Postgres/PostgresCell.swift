/// One value of a result row, as handed to `PostgresDecodable.decode(from:)`.
public struct PostgresCell: Sendable {
    public let column: PostgresColumn
    /// The value's text representation; nil for SQL NULL.
    public let bytes: ArraySlice<UInt8>?

    public init(column: PostgresColumn, bytes: ArraySlice<UInt8>?) {
        self.column = column
        self.bytes = bytes
    }

    /// The non-NULL value of a column whose type is one of `accepted` (any type when `accepted` is nil).
    public func value<T>(as type: T.Type, accepting accepted: Set<PostgresDataType>?) throws(PostgresError)
        -> ArraySlice<UInt8>
    {
        if let accepted, !accepted.contains(column.dataType) {
            let names = accepted.map(\.description).sorted().joined(separator: ", ")
            throw failure(as: type, "the column has PostgreSQL type \(column.dataType); \(T.self) reads \(names)")
        }
        guard let bytes else {
            throw failure(as: type, "the value is NULL; decode as \(T.self)? to accept NULL")
        }
        return bytes
    }

    /// A decoding error for this column. `reason` must describe the problem without quoting the value.
    public func failure<T>(as type: T.Type, _ reason: String) -> PostgresError {
        .decoding(column: column.name, expected: "\(T.self)", reason: reason)
    }
}
