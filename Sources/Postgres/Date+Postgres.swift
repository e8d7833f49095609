import Foundation

/// `Date` binds as timestamptz (UTC, microsecond precision) and decodes timestamptz, timestamp (read as UTC) and
/// date (midnight UTC). Decoding does not depend on the session's `TimeZone`; see `PostgresTimestamp`.
extension Date: PostgresBindable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { .timestamptz }

    public func encodePostgresValue(into buffer: inout [UInt8]) -> Bool {
        PostgresTimestamp.format(microsSince1970: PostgresTimestamp.micros(of: timeIntervalSince1970), into: &buffer)
        return true
    }

    public static func decode(from cell: PostgresCell) throws(PostgresError) -> Date {
        let bytes = try cell.value(as: Date.self, accepting: [.timestamptz, .timestamp, .date])
        switch PostgresTimestamp.parse(bytes) {
        case .micros(let micros):
            // One correctly rounded division keeps millisecond and microsecond values exact in Double terms.
            return Date(timeIntervalSince1970: Double(micros) / 1_000_000)
        case .infinity:
            return .distantFuture
        case .negativeInfinity:
            return .distantPast
        case nil:
            throw cell.failure(as: Date.self, "the text is not an ISO timestamp (is DateStyle ISO?)")
        }
    }
}
