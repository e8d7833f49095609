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
