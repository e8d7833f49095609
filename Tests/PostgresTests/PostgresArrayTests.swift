import Foundation
import Postgres
import Testing

@Suite("Array parameters")
struct PostgresArrayTests {
    @Test func literalQuotesEscapesAndWritesNulls() {
        let array = PostgresArray(["a", nil, "say \"hi\"", "back\\slash", "", "{,}"] as [String?])
        #expect(String(decoding: array.literal, as: UTF8.self) == #"{"a",NULL,"say \"hi\"","back\\slash","","{,}"}"#)
        #expect(array.count == 6)
        #expect(String(decoding: PostgresArray([String]()).literal, as: UTF8.self) == "{}")
        #expect(String(decoding: PostgresArray([[UInt8(0), 0xAB], nil] as [[UInt8]?]).literal, as: UTF8.self) == #"{"\\x00ab",NULL}"#)
    }

    @Test func everyElementTypeRoundTripsThroughTheServer() throws {
        let connection = try PostgresTestSupport.connect()
        let ids = [UUID(), UUID(), UUID()]
        let texts: [String?] = ["plain", "quote \" and \\ and , { } NULL", nil]
        let numbers: [Int64?] = [Int64.max, nil, -7]
        let blobs: [[UInt8]?] = [[0, 1, 255], nil, []]
        let rows = try connection.query(
            """
            SELECT t.id, t.note, t.n, t.raw, t.i FROM unnest($1::uuid[], $2::text[], $3::int8[], $4::bytea[])
                WITH ORDINALITY AS t(id, note, n, raw, i) ORDER BY t.i
            """,
            [PostgresArray(ids), PostgresArray(texts), PostgresArray(numbers), PostgresArray(blobs)])
        #expect(rows.count == 3)
        for (index, row) in rows.enumerated() {
            #expect(try row.decode("id", as: UUID.self) == ids[index])
            #expect(try row.decode("note", as: String?.self) == texts[index])
            #expect(try row.decode("n", as: Int64?.self) == numbers[index])
            #expect(try row.decode("raw", as: [UInt8]?.self) == blobs[index])
        }
        // The literal "NULL" as a quoted element is a string, not SQL NULL.
        let null = try connection.query("SELECT ($1::text[])[1] IS NULL AS isnull", [PostgresArray(["NULL"])])
        #expect(try null[0].decode("isnull", as: Bool.self) == false)
    }

    @Test func aNulInAnElementIsRefusedAtBindTime() throws {
        let connection = try PostgresTestSupport.connect()
        #expect(throws: PostgresError.self) {
            try connection.query("SELECT cardinality($1::text[]) AS n", [PostgresArray(["a\u{0}b"])])
        }
        #expect(try connection.query("SELECT 1 AS one")[0].decode("one", as: Int.self) == 1)
    }
}
