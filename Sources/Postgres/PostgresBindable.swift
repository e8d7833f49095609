/// A value bound as a statement parameter.
///
/// Never build SQL from values: every value travels as a `$1`, `$2`, … parameter, so it cannot change the
/// statement and never appears in statement text, logs of statements, or `pg_stat_activity`.
///
/// Conformances: `String`, `Int`, `Int32`, `Int64`, `Bool`, `Double`, `Date` (timestamptz), `UUID`,
/// `[UInt8]` (bytea, sent in binary), `PostgresJSONB`, and `Optional` of any of these (nil is SQL NULL).
public protocol PostgresBindable: Sendable {
    /// The type declared to the server when the statement is prepared.
    static var postgresDataType: PostgresDataType { get }
    /// The format `encodePostgresValue` writes.
    static var postgresFormat: PostgresFormat { get }
    /// Appends the value in `postgresFormat` to `buffer`; returns false (appending nothing) for SQL NULL.
    func encodePostgresValue(into buffer: inout [UInt8]) -> Bool
}

extension PostgresBindable {
    public static var postgresFormat: PostgresFormat { .text }
}
