/// `Int` and `Int64` bind as int8, `Int32` as int4; all three decode from any integer column, range-checked, so
/// an `int8` column read as `Int32` works until a value would not fit, and then fails naming the column.
/// `numeric` is accepted too when the value is integral, because `sum(int8)` and `count`-style aggregates over
/// bigint return numeric; a fractional value fails rather than being truncated.
extension Int: PostgresBindable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .int8 }
}

extension Int64: PostgresBindable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .int8 }
}

extension Int32: PostgresBindable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .int4 }
}

extension PostgresBindable where Self: FixedWidthInteger {
    public func encodePostgresValue(into buffer: inout [UInt8]) -> Bool {
        buffer.append(contentsOf: String(self).utf8)
        return true
    }
}

extension PostgresDecodable where Self: FixedWidthInteger & SignedInteger {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Self {
        let bytes = try cell.value(as: Self.self, accepting: [.int2, .int4, .int8, .oidType, .numeric])
        var index = bytes.startIndex
        let negative = index < bytes.endIndex && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < bytes.endIndex else { throw cell.failure(as: Self.self, "the text is not an integer") }
        var value: Self = 0
        while index < bytes.endIndex {
            let byte = bytes[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else {
                throw cell.failure(as: Self.self, "the text is not an integer")
            }
            // Accumulate negatively so that Self.min parses without overflowing.
            let (shifted, multiplyOverflow) = value.multipliedReportingOverflow(by: 10)
            let (next, subtractOverflow) = shifted.subtractingReportingOverflow(Self(byte - UInt8(ascii: "0")))
            guard !multiplyOverflow, !subtractOverflow else {
                throw cell.failure(as: Self.self, "the value is outside \(Self.self)'s range")
            }
            value = next
            index += 1
        }
        if negative { return value }
        let (positive, overflow) = Self.zero.subtractingReportingOverflow(value)
        guard !overflow else { throw cell.failure(as: Self.self, "the value is outside \(Self.self)'s range") }
        return positive
    }
}
