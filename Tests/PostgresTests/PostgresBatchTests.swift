import Foundation
import Postgres
import Testing

@Suite("Pipelined batches")
struct PostgresBatchTests {
    let connection: PostgresConnection

    init() throws {
        connection = try PostgresTestSupport.connect()
    }

    private func count(_ table: String) throws -> Int {
        try connection.query("SELECT count(*) AS n FROM \(table)")[0].decode("n")
    }

    @Test func insertsEveryRowAndReportsCounts() throws {
        try PostgresTestSupport.withTable("pp_batch", columns: "id int8 PRIMARY KEY, note text, raw bytea", on: connection) { table in
            let sql = "INSERT INTO \(table) (id, note, raw) VALUES ($1, $2, $3)"
            let batch: [[any PostgresBindable]] = (1...250).map { [$0, $0 % 2 == 0 ? "even" : String?.none, [UInt8(0), UInt8($0 % 256)]] }
            let counts = try connection.executeBatch(sql, batch)
            #expect(counts == Array(repeating: 1, count: 250))
            #expect(try count(table) == 250)
            let row = try connection.query("SELECT note, raw FROM \(table) WHERE id = $1", [42])[0]
            #expect(try row.decode("note", as: String?.self) == "even")
            #expect(try row.decode("raw", as: [UInt8].self) == [0, 42])
            let updated = try connection.executeBatch("UPDATE \(table) SET note = $2 WHERE id <= $1", [[10, "x"], [0, "y"]])
            #expect(updated == [10, 0])
        }
    }

    @Test func aFailureOutsideATransactionAppliesNothingAndLeavesTheConnectionUsable() throws {
        try PostgresTestSupport.withTable("pp_batch_fail", columns: "id int8 PRIMARY KEY", on: connection) { table in
            let error = #expect(throws: PostgresError.self) {
                try connection.executeBatch("INSERT INTO \(table) VALUES ($1)", [[1], [2], [2], [3]])
            }
            #expect(error?.isUniqueViolation == true)
            #expect(try count(table) == 0)
            #expect(!connection.isInTransaction)
            try connection.simpleQuery("SELECT 1")  // PQexec refuses to run in pipeline mode
        }
    }

    @Test func runsInsideATransaction() throws {
        try PostgresTestSupport.withTable("pp_batch_txn", columns: "id int8 PRIMARY KEY", on: connection) { table in
            try connection.transaction { connection in
                try connection.executeBatch("INSERT INTO \(table) VALUES ($1)", (1...100).map { [$0] })
                try connection.query("DELETE FROM \(table) WHERE id > $1", [90])
            }
            #expect(try count(table) == 90)
            #expect(throws: PostgresError.self) {
                try connection.transaction { connection in
                    try connection.executeBatch("INSERT INTO \(table) VALUES ($1)", [[1000], [1]])
                }
            }
            #expect(try count(table) == 90)
        }
    }

    @Test func rejectsMixedLayoutsAndAcceptsEmptyBatches() throws {
        #expect(try connection.executeBatch("SELECT $1::int8", []) == [])
        let error = #expect(throws: PostgresError.self) {
            try connection.executeBatch("SELECT $1::int8", [[1], [Int32(2)]])
        }
        guard case .invalidUsage = error else {
            Issue.record("expected .invalidUsage, got \(String(describing: error))")
            return
        }
    }

    @Test func aBatchOnATerminatedBackendIsAConnectionProblemAndReconnectRecovers() throws {
        // Prepared beforehand, so the failure happens inside the pipeline rather than at prepare time.
        #expect(try connection.executeBatch("SELECT $1::int8", [[1]]) == [1])
        let pid = try #require(connection.backendPID)
        let killer = try PostgresTestSupport.connect()
        try killer.query("SELECT pg_terminate_backend($1, $2)", [pid, Int64(5_000)])
        let error = #expect(throws: PostgresError.self) {
            try connection.executeBatch("SELECT $1::int8", [[1], [2]])
        }
        #expect(error?.isConnectionProblem == true)
        try connection.reconnect()
        try connection.simpleQuery("SELECT 1")
        #expect(try connection.executeBatch("SELECT $1::int8", [[1], [2]]) == [1, 1])
    }
}
