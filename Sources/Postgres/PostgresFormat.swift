/// The wire format of a value: PostgreSQL's text representation or its binary `send`/`recv` representation.
///
/// Parameters are sent as text except `bytea`, whose binary format is the raw bytes (no escaping, zero bytes
/// allowed). Results are always requested as text, which keeps decoding independent of server-internal layouts.
public enum PostgresFormat: Int32, Sendable {
    case text = 0
    case binary = 1
}
