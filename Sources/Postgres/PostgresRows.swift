/// The rows a statement returned (possibly none) and how many rows it affected.
public struct PostgresRows: Sendable, RandomAccessCollection {
    let storage: PostgresResultStorage
    /// The count from the command tag: rows inserted, updated, deleted, selected, …; 0 when the tag has none.
    public let affectedRows: Int
    /// The command tag, e.g. `INSERT 0 1` or `SELECT 3`.
    public let commandTag: String

    init(storage: PostgresResultStorage, affectedRows: Int, commandTag: String) {
        self.storage = storage
        self.affectedRows = affectedRows
        self.commandTag = commandTag
    }

    public var columns: [PostgresColumn] { storage.columns }
    public var startIndex: Int { 0 }
    public var endIndex: Int { storage.rowCount }

    public subscript(position: Int) -> PostgresRow {
        precondition(indices.contains(position), "row index \(position) out of range 0..<\(count)")
        return PostgresRow(storage: storage, index: position)
    }
}

/// One result row. Values are looked up by column name and decoded to the requested Swift type.
public struct PostgresRow: Sendable {
    let storage: PostgresResultStorage
    let index: Int
    /// Prepended to every name looked up (``prefixed(_:)``); empty for the row itself.
    let prefix: String

    init(storage: PostgresResultStorage, index: Int, prefix: String = "") {
        (self.storage, self.index, self.prefix) = (storage, index, prefix)
    }

    public var columns: [PostgresColumn] { storage.columns }

    /// The same row, whose columns are looked up by name with `prefix` prepended: for a row that joins records whose
    /// columns share names (each has an `id`), one of them selected under aliases starting with `prefix`, so that
    /// record's own decoder reads its part unchanged. Positions (``decode(at:as:)``) are the row's.
    public func prefixed(_ prefix: String) -> PostgresRow {
        PostgresRow(storage: storage, index: index, prefix: self.prefix + prefix)
    }

    private func position(of column: String) -> Int? {
        storage.columnIndexes[prefix.isEmpty ? column : prefix + column]
    }

    /// Decodes the named column. Fails with `.decoding` naming the column when it is missing, NULL (unless `T` is
    /// an `Optional`), of a type `T` does not read, or malformed.
    public func decode<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws(PostgresError) -> T {
        guard let position = position(of: column) else {
            let available = storage.columns.map(\.name).joined(separator: ", ")
            throw .decoding(column: prefix + column, expected: "\(T.self)", reason: "the result has no such column (it has: \(available))")
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
        guard let position = position(of: column) else { return true }
        return storage.value(row: index, column: position) == nil
    }

    public func hasColumn(_ column: String) -> Bool {
        position(of: column) != nil
    }
}

/// A column of a result: its name (as the query labelled it) and its PostgreSQL type.
public struct PostgresColumn: Sendable, Hashable {
    public let name: String
    public let dataType: PostgresDataType

    public init(name: String, dataType: PostgresDataType) {
        self.name = name
        self.dataType = dataType
    }
}

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
