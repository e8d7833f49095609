import Foundation
import Postgres
import Testing

@Suite("Binding and decoding")
struct PostgresCodingTests {
    let connection: PostgresConnection

    init() throws {
        connection = try PostgresTestSupport.connect()
    }

    @Test func roundTripsEveryTypeThroughATableIncludingNulls() throws {
        let text = "Grüße, 世界 🌍 \"quoted\" 'single' ; DROP TABLE x; --"
        let large: Int64 = 9_007_199_254_740_993  // 2^53 + 1: lost if anything goes through Double
        let date = Date(timeIntervalSince1970: 1_700_000_000.123)
        let uuid = UUID()
        let bytes: [UInt8] = [0, 1, 0, 255, 0, 0x5C, 0x78]
        let columns = """
            id int PRIMARY KEY, s text, i int8, i32 int4, i64 int8, b bool, d float8, t timestamptz, u uuid,
            raw bytea, j jsonb
            """
        try PostgresTestSupport.withTable("pp_coding", columns: columns, on: connection) { table in
            let insert = "INSERT INTO \(table) (id, s, i, i32, i64, b, d, t, u, raw, j) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
            try connection.query(insert, [
                Int32(1), text, Int.min, Int32.max, large, true, 0.1 + 0.2, date, uuid, bytes,
                PostgresJSONB(#"{"a": [1, 2]}"#),
            ])
            try connection.query(insert, [
                Int32(2), String?.none, Int?.none, Int32?.none, Int64?.none, Bool?.none, Double?.none, Date?.none,
                UUID?.none, [UInt8]?.none, PostgresJSONB?.none,
            ])
            let rows = try connection.query("SELECT * FROM \(table) ORDER BY id")
            #expect(rows.count == 2)
            let full = rows[0]
            #expect(try full.decode("s", as: String.self) == text)
            #expect(try full.decode("i", as: Int.self) == Int.min)
            #expect(try full.decode("i32", as: Int32.self) == Int32.max)
            #expect(try full.decode("i64", as: Int64.self) == large)
            #expect(try full.decode("b", as: Bool.self) == true)
            #expect(try full.decode("d", as: Double.self) == 0.1 + 0.2)
            #expect(try full.decode("t", as: Date.self) == date)
            #expect(try full.decode("u", as: UUID.self) == uuid)
            #expect(try full.decode("raw", as: [UInt8].self) == bytes)
            #expect(try full.decode("j", as: PostgresJSONB.self) == PostgresJSONB(#"{"a": [1, 2]}"#))
            #expect(try full.decode("s", as: String?.self) == text)

            let empty = rows[1]
            for column in ["s", "i", "i32", "i64", "b", "d", "t", "u", "raw", "j"] {
                #expect(empty.isNull(column))
            }
            #expect(!full.isNull("s"))
            #expect(try empty.decode("s", as: String?.self) == nil)
            #expect(try empty.decode("i", as: Int?.self) == nil)
            #expect(try empty.decode("i32", as: Int32?.self) == nil)
            #expect(try empty.decode("i64", as: Int64?.self) == nil)
            #expect(try empty.decode("b", as: Bool?.self) == nil)
            #expect(try empty.decode("d", as: Double?.self) == nil)
            #expect(try empty.decode("t", as: Date?.self) == nil)
            #expect(try empty.decode("u", as: UUID?.self) == nil)
            #expect(try empty.decode("raw", as: [UInt8]?.self) == nil)
            #expect(try empty.decode("j", as: PostgresJSONB?.self) == nil)
        }
    }

    /// A row joining two records that share column names: the one selected under a prefix is read by its own names
    /// through the prefixed view, the other by the row; a prefixed view sees no unprefixed column.
    @Test func aPrefixedViewReadsTheRecordSelectedUnderItsPrefix() throws {
        let row = try connection.query("SELECT 1::int8 AS id, 'op' AS name, 2::int8 AS p_id, 'pay' AS p_name, NULL::text AS p_note")[0]
        let payment = row.prefixed("p_")
        #expect(try row.decode("id", as: Int64.self) == 1 && row.decode("name", as: String.self) == "op")
        #expect(try payment.decode("id", as: Int64.self) == 2 && payment.decode("name", as: String.self) == "pay")
        #expect(payment.hasColumn("note") && payment.isNull("note") && !row.hasColumn("note"))
        #expect(!row.prefixed("x_").hasColumn("id") && row.prefixed("p").hasColumn("_id"))
        #expect(throws: PostgresError.self) { try payment.decode("missing", as: String.self) }
    }

    @Test func nullParametersAreTypedSoTheyPlanWithoutCasts() throws {
        let row = try connection.query("SELECT $1 IS NULL AS a, $2 IS NULL AS b", [Int?.none, Date?.none])[0]
        #expect(try row.decode("a", as: Bool.self))
        #expect(try row.decode("b", as: Bool.self))
    }

    @Test(arguments: [
        0.0, -0.0, Double.leastNormalMagnitude / 4, Double.leastNonzeroMagnitude, 1.7976931348623157e308, -123.456, Double.infinity, -Double.infinity,
    ])
    func roundTripsDoubles(_ value: Double) throws {
        let decoded = try connection.query("SELECT $1 AS v", [value])[0].decode("v", as: Double.self)
        #expect(decoded == value)
        #expect(decoded.sign == value.sign)
    }

    @Test func roundTripsNaN() throws {
        #expect(try connection.query("SELECT $1 AS v", [Double.nan])[0].decode("v", as: Double.self).isNaN)
    }

    @Test(arguments: [
        1_700_000_000.123,  // milliseconds
        1_700_000_000.123456,  // microseconds
        -0.001,  // 1969-12-31 23:59:59.999
        -1_234_567_890.5,
        0,
        951_782_400.999,  // 2000-02-29 (leap day)
        253_402_300_799.999,  // 9999-12-31 23:59:59.999
        -62_135_596_800,  // 0001-01-01
        -62_167_219_200,  // 0001-01-01 BC (year 0 in proleptic Gregorian)
        -62_167_219_200 - 86_400 * 365.25 * 10,  // around 11 BC
    ])
    func roundTripsDates(_ seconds: Double) throws {
        let date = Date(timeIntervalSince1970: seconds)
        let decoded = try connection.query("SELECT $1 AS t", [date])[0].decode("t", as: Date.self)
        #expect(decoded == date, "\(decoded.timeIntervalSince1970) != \(seconds)")
    }

    @Test func datesKeepMillisecondsExactly() throws {
        let date = Date(timeIntervalSince1970: 1_712_345_678.901)
        let row = try connection.query(
            "SELECT $1 AS t, (extract(epoch FROM $1) * 1000)::int8 AS ms, to_char($1 AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') AS utc",
            [date])[0]
        #expect(try row.decode("t", as: Date.self) == date)
        #expect(try row.decode("ms", as: Int64.self) == 1_712_345_678_901)
        #expect(try row.decode("utc", as: String.self) == "2024-04-05 19:34:38.901")
    }

    @Test func sessionRunsInUTCWithISODates() throws {
        let row = try connection.query("SELECT current_setting('TimeZone') AS tz, current_setting('DateStyle') AS ds")[0]
        #expect(try row.decode("tz", as: String.self) == "UTC")
        #expect(try row.decode("ds", as: String.self).hasPrefix("ISO"))
    }

    @Test(arguments: ["Asia/Kathmandu", "America/St_Johns", "Pacific/Chatham"])
    func timestampsDecodeCorrectlyWhateverTheSessionTimeZone(_ zone: String) throws {
        try connection.simpleQuery("SET TimeZone = '\(zone)'")
        let date = Date(timeIntervalSince1970: 1_710_000_000.25)
        let row = try connection.query("SELECT $1 AS t, '2024-03-09 16:00:00.25+00'::timestamptz AS literal", [date])[0]
        #expect(try row.decode("t", as: Date.self) == date)
        #expect(try row.decode("literal", as: Date.self) == date)
    }

    @Test func timestampsWithSecondsInTheOffsetDecode() throws {
        // Before standard time, zones print local mean time offsets with seconds (Kolkata: +05:53:28).
        try connection.simpleQuery("SET TimeZone = 'Asia/Kolkata'")
        let row = try connection.query("SELECT '1850-06-01 00:00:00+00'::timestamptz AS t, '1850-06-01 00:00:00+00'::timestamptz::text AS text")[0]
        #expect(try row.decode("text", as: String.self).hasSuffix("+05:53:28"))
        #expect(try row.decode("t", as: Date.self) == Date(timeIntervalSince1970: -3_773_779_200))
    }

    @Test func decodesTimestampWithoutZoneAndDateAsUTC() throws {
        let row = try connection.query(
            "SELECT '2024-01-02 03:04:05.5'::timestamp AS ts, '2024-01-02'::date AS d, 'infinity'::timestamptz AS inf")[0]
        #expect(try row.decode("ts", as: Date.self) == Date(timeIntervalSince1970: 1_704_164_645.5))
        #expect(try row.decode("d", as: Date.self) == Date(timeIntervalSince1970: 1_704_153_600))
        #expect(try row.decode("inf", as: Date.self) == .distantFuture)
    }

    @Test func integersDecodeFromEveryIntegerColumnWithRangeChecks() throws {
        let row = try connection.query(
            "SELECT 7::int2 AS small, 2147483648::int8 AS big, (-9223372036854775808)::int8 AS min")[0]
        #expect(try row.decode("small", as: Int32.self) == 7)
        #expect(try row.decode("big", as: Int.self) == 2_147_483_648)
        #expect(try row.decode("min", as: Int64.self) == Int64.min)
        let sums = try connection.query("SELECT sum(x) AS total, 2.5::numeric AS half FROM (VALUES (4000000000::int8), (5)) v(x)")[0]
        #expect(sums.columns.first?.dataType == .numeric)
        #expect(try sums.decode("total", as: Int.self) == 4_000_000_005)
        #expect(throws: PostgresError.self) { try sums.decode("half", as: Int.self) }
        let error = #expect(throws: PostgresError.self) { try row.decode("big", as: Int32.self) }
        guard case .decoding(let column, let expected, let reason) = error else {
            Issue.record("expected .decoding, got \(String(describing: error))")
            return
        }
        #expect(column == "big")
        #expect(expected == "Int32")
        #expect(reason.contains("range"))
        #expect(!"\(error!)".contains("2147483648"))
    }

    @Test func decodingErrorsNameColumnAndTypesButNotValues() throws {
        let row = try connection.query("SELECT '4111111111111111'::text AS pan, NULL::int8 AS missing")[0]
        let wrongType = #expect(throws: PostgresError.self) { try row.decode("pan", as: Int.self) }
        let description = wrongType.map { "\($0)" } ?? ""
        #expect(description.contains("\"pan\""))
        #expect(description.contains("Int"))
        #expect(description.contains("text"))
        #expect(!description.contains("4111"))

        let null = #expect(throws: PostgresError.self) { try row.decode("missing", as: Int.self) }
        #expect(null.map { "\($0)" }?.contains("NULL") == true)

        let absent = #expect(throws: PostgresError.self) { try row.decode("nope", as: String.self) }
        guard case .decoding(let column, _, let reason) = absent else {
            Issue.record("expected .decoding")
            return
        }
        #expect(column == "nope")
        #expect(reason.contains("pan"))
        #expect(row.isNull("nope"))
        #expect(!row.hasColumn("nope"))
    }

    @Test func textParameterWithNulIsRejectedWithItsPosition() throws {
        let error = #expect(throws: PostgresError.self) {
            try connection.query("SELECT $1::int8, $2::text", [1, "a\u{0}b"])
        }
        #expect(error == .invalidParameter(position: 2, reason: "a text value must not contain a NUL byte"))
    }

    @Test func serverErrorsDoNotEchoBoundValues() throws {
        let error = #expect(throws: PostgresError.self) {
            try connection.query("SELECT $1::int8 AS n", ["4111111111111111x"])
        }
        #expect(error?.sqlState == "22P02")
        let description = error.map { "\($0)" } ?? ""
        #expect(description.contains("invalid input syntax"))
        #expect(!description.contains("4111"))
    }

    @Test func reportsAffectedRowsAndCommandTag() throws {
        try PostgresTestSupport.withTable("pp_affected", columns: "id int", on: connection) { table in
            let insert = try connection.query("INSERT INTO \(table) SELECT generate_series(1, 5)")
            #expect(insert.affectedRows == 5)
            #expect(insert.commandTag == "INSERT 0 5")
            #expect(insert.isEmpty)
            let update = try connection.query("UPDATE \(table) SET id = id + 1 WHERE id > $1", [3])
            #expect(update.affectedRows == 2)
            let select = try connection.query("SELECT id FROM \(table) ORDER BY id")
            var ids: [Int] = []
            for row in select { ids.append(try row.decode("id")) }
            #expect(ids == [1, 2, 3, 5, 6])
            #expect(select.affectedRows == 5)
            #expect(select.columns == [PostgresColumn(name: "id", dataType: .int4)])
        }
    }
}
