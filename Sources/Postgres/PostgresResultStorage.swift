import CLibPQ

/// The values of one result, copied out of the `PGresult` so that rows are plain immutable Swift values that
/// can cross threads after the connection has moved on (the `PGresult` is cleared right after copying).
///
/// All cells live in one byte array, row-major, addressed by start offset and length (-1 for NULL); a cell is
/// handed out as an `ArraySlice` of that array without further copying.
final class PostgresResultStorage: Sendable {
    let columns: [PostgresColumn]
    let columnIndexes: [String: Int]
    let rowCount: Int
    private let bytes: [UInt8]
    private let starts: [Int]
    private let lengths: [Int32]

    /// An empty result (no columns, no rows), e.g. for commands run with `simpleQuery`.
    init() {
        columns = []
        columnIndexes = [:]
        rowCount = 0
        bytes = []
        starts = []
        lengths = []
    }

    /// Copies every value of `result`, which must be in text format.
    init(copying result: OpaquePointer) {
        let columnCount = Int(PQnfields(result))
        rowCount = Int(PQntuples(result))
        var columns: [PostgresColumn] = []
        var columnIndexes: [String: Int] = [:]
        for column in 0..<columnCount {
            let name = PQfname(result, Int32(column)).map { String(cString: $0) } ?? "?column?"
            columns.append(PostgresColumn(name: name, dataType: PostgresDataType(oid: PQftype(result, Int32(column)))))
            // The first of several equally named columns wins, as in most drivers.
            if columnIndexes[name] == nil { columnIndexes[name] = column }
        }
        var totalLength = 0
        var lengths: [Int32] = []
        lengths.reserveCapacity(rowCount * columnCount)
        for row in 0..<rowCount {
            for column in 0..<columnCount {
                if PQgetisnull(result, Int32(row), Int32(column)) != 0 {
                    lengths.append(-1)
                } else {
                    let length = PQgetlength(result, Int32(row), Int32(column))
                    lengths.append(length)
                    totalLength += Int(length)
                }
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(totalLength)
        var starts: [Int] = []
        starts.reserveCapacity(lengths.count)
        for row in 0..<rowCount {
            for column in 0..<columnCount {
                starts.append(bytes.count)
                let length = Int(lengths[row * columnCount + column])
                guard length > 0, let value = PQgetvalue(result, Int32(row), Int32(column)) else { continue }
                value.withMemoryRebound(to: UInt8.self, capacity: length) {
                    bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
                }
            }
        }
        self.columns = columns
        self.columnIndexes = columnIndexes
        self.bytes = bytes
        self.starts = starts
        self.lengths = lengths
    }

    /// The value at (`row`, `column`), nil for NULL. Both indexes must be in range.
    func value(row: Int, column: Int) -> ArraySlice<UInt8>? {
        let cell = row * columns.count + column
        let length = Int(lengths[cell])
        guard length >= 0 else { return nil }
        return bytes[starts[cell]..<starts[cell] + length]
    }
}

extension PostgresResultStorage {
    /// Shared storage of every result without rows.
    static let empty = PostgresResultStorage()
}
