/// One result row. Values are looked up by column name and decoded to the requested Swift type.
public struct PostgresRow: Sendable {
    let storage: PostgresResultStorage
    let index: Int

    public var columns: [PostgresColumn] { storage.columns }

    /// Decodes the named column. Fails with `.decoding` naming the column when it is missing, NULL (unless `T` is
    /// an `Optional`), of a type `T` does not read, or malformed.
    public func decode<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws(PostgresError) -> T {
        guard let position = storage.columnIndexes[column] else {
            let available = storage.columns.map(\.name).joined(separator: ", ")
            throw .decoding(column: column, expected: "\(T.self)", reason: "the result has no such column (it has: \(available))")
        }
        return try decode(at: position, as: type)
    }

    /// Decodes the column at `position` (0-based, in select-list order).
    public func decode<T: PostgresDecodable>(at position: Int, as type: T.Type = T.self) throws(PostgresError) -> T {
        guard storage.columns.indices.contains(position) else {
            throw .decoding(column: "#\(position)", expected: "\(T.self)", reason: "the result has only \(storage.columns.count) columns")
        }
        return try T.decode(from: cell(at: position))
    }

    /// The raw cell at `position`, for custom decoding.
    public func cell(at position: Int) -> PostgresCell {
        PostgresCell(column: storage.columns[position], bytes: storage.value(row: index, column: position))
    }

    /// True when the named column is NULL in this row — or when the result has no such column, which is also
    /// "no value"; use `hasColumn` to tell the two apart.
    public func isNull(_ column: String) -> Bool {
        guard let position = storage.columnIndexes[column] else { return true }
        return storage.value(row: index, column: position) == nil
    }

    public func hasColumn(_ column: String) -> Bool {
        storage.columnIndexes[column] != nil
    }
}
