/// A PostgreSQL type, identified by its OID.
///
/// Bound parameters declare their type to the server so that statements such as `SELECT $1 IS NULL` plan without
/// guessing; `.unspecified` (OID 0) lets the server infer the type from context instead, which is what `String`
/// uses so that one Swift string can feed `text`, `varchar`, `uuid` or enum columns alike.
public struct PostgresDataType: Sendable, Hashable, CustomStringConvertible {
    /// The type's OID as found in `pg_type`.
    public let oid: UInt32

    public init(oid: UInt32) {
        self.oid = oid
    }

    public static let unspecified = PostgresDataType(oid: 0)
    public static let bool = PostgresDataType(oid: 16)
    public static let bytea = PostgresDataType(oid: 17)
    public static let char = PostgresDataType(oid: 18)
    public static let name = PostgresDataType(oid: 19)
    public static let int8 = PostgresDataType(oid: 20)
    public static let int2 = PostgresDataType(oid: 21)
    public static let int4 = PostgresDataType(oid: 23)
    public static let text = PostgresDataType(oid: 25)
    public static let oidType = PostgresDataType(oid: 26)
    public static let json = PostgresDataType(oid: 114)
    public static let float4 = PostgresDataType(oid: 700)
    public static let float8 = PostgresDataType(oid: 701)
    public static let unknown = PostgresDataType(oid: 705)
    public static let bpchar = PostgresDataType(oid: 1042)
    public static let varchar = PostgresDataType(oid: 1043)
    public static let date = PostgresDataType(oid: 1082)
    public static let timestamp = PostgresDataType(oid: 1114)
    public static let timestamptz = PostgresDataType(oid: 1184)
    public static let numeric = PostgresDataType(oid: 1700)
    public static let uuid = PostgresDataType(oid: 2950)
    public static let jsonb = PostgresDataType(oid: 3802)

    /// The SQL name for the built-in types this module knows, `oid <n>` otherwise.
    public var description: String {
        switch oid {
        case 0: "unspecified"
        case 16: "bool"
        case 17: "bytea"
        case 18: "char"
        case 19: "name"
        case 20: "int8"
        case 21: "int2"
        case 23: "int4"
        case 25: "text"
        case 26: "oid"
        case 114: "json"
        case 700: "float4"
        case 701: "float8"
        case 705: "unknown"
        case 1042: "bpchar"
        case 1043: "varchar"
        case 1082: "date"
        case 1114: "timestamp"
        case 1184: "timestamptz"
        case 1700: "numeric"
        case 2950: "uuid"
        case 3802: "jsonb"
        default: "oid \(oid)"
        }
    }
}
