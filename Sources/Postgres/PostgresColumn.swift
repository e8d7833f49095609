/// A column of a result: its name (as the query labelled it) and its PostgreSQL type.
public struct PostgresColumn: Sendable, Hashable {
    public let name: String
    public let dataType: PostgresDataType

    public init(name: String, dataType: PostgresDataType) {
        self.name = name
        self.dataType = dataType
    }
}
