/// Binds as float8; decodes float4, float8 and numeric (numeric may lose precision: use String for money).
extension Double: PostgresBindable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .float8 }

    public func encodePostgresValue(into buffer: inout [UInt8]) -> Bool {
        // Swift's description is the shortest text that round-trips; only the special values are spelled
        // differently in PostgreSQL.
        let text = isNaN ? "NaN" : isInfinite ? (self < 0 ? "-Infinity" : "Infinity") : description
        buffer.append(contentsOf: text.utf8)
        return true
    }

    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Double {
        let bytes = try cell.value(as: Double.self, accepting: [.float4, .float8, .numeric])
        guard let value = Double(String(decoding: bytes, as: UTF8.self)) else {
            throw cell.failure(as: Double.self, "the text is not a floating-point number")
        }
        return value
    }
}
