/// A Swift type that can be read from a result column.
///
/// Results are requested in text format; each conformance parses PostgreSQL's text output for the column types
/// it accepts and rejects other column types with an error naming the column and both types, so that a schema
/// change shows up as a clear decoding error rather than as a silently wrong value.
public protocol PostgresDecodable: Sendable {
    /// Decodes `cell`; a NULL cell is an error except for `Optional`.
    static func decode(from cell: PostgresCell) throws(PostgresError) -> Self
}
