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

/// A Swift type that can be read from a result column.
///
/// Results are requested in text format; each conformance parses PostgreSQL's text output for the column types
/// it accepts and rejects other column types with an error naming the column and both types, so that a schema
/// change shows up as a clear decoding error rather than as a silently wrong value.
public protocol PostgresDecodable: Sendable {
    /// Decodes `cell`; a NULL cell is an error except for `Optional`.
    static func decode(from cell: PostgresCell) throws(PostgresError) -> Self
}

/// The wire format of a value: PostgreSQL's text representation or its binary `send`/`recv` representation.
///
/// Parameters are sent as text except `bytea`, whose binary format is the raw bytes (no escaping, zero bytes
/// allowed). Results are always requested as text, which keeps decoding independent of server-internal layouts.
public enum PostgresFormat: Int32, Sendable {
    case text = 0
    case binary = 1
}
