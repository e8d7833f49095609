import Foundation
import Postgres
import Synchronization
import Testing

@Suite("Transactions and savepoints")
struct PostgresTransactionTests {
    struct Boom: Error, Equatable {}

    let connection: PostgresConnection

    init() throws {
        connection = try PostgresTestSupport.connect()
    }

    private func ids(in table: String) throws -> [Int] {
        // Read through a second connection: only committed rows are visible there.
        let observer = try PostgresTestSupport.connect()
        var ids: [Int] = []
        for row in try observer.query("SELECT id FROM \(table) ORDER BY id") { ids.append(try row.decode("id")) }
        return ids
    }

    @Test func commitsAndReturnsTheBodysValue() throws {
        try PostgresTestSupport.withTable("pp_txn_commit", columns: "id int PRIMARY KEY", on: connection) { table in
            let value = try connection.transaction { connection in
                try connection.query("INSERT INTO \(table) VALUES ($1), ($2)", [1, 2])
                #expect(connection.isInTransaction)
                return "done"
            }
            #expect(value == "done")
            #expect(!connection.isInTransaction)
            #expect(try ids(in: table) == [1, 2])
        }
    }

    @Test func rollsBackAndRethrowsOtherErrors() throws {
        try PostgresTestSupport.withTable("pp_txn_rollback", columns: "id int PRIMARY KEY", on: connection) { table in
            var calls = 0
            #expect(throws: Boom.self) {
                try connection.transaction { connection in
                    calls += 1
                    try connection.query("INSERT INTO \(table) VALUES ($1)", [1])
                    throw Boom()
                }
            }
            #expect(calls == 1)
            #expect(!connection.isInTransaction)
            #expect(try ids(in: table) == [])
            // A server error (not retryable) rolls back the same way.
            try connection.query("INSERT INTO \(table) VALUES ($1)", [7])
            let error = #expect(throws: PostgresError.self) {
                try connection.transaction { connection in
                    try connection.query("INSERT INTO \(table) VALUES ($1)", [8])
                    try connection.query("INSERT INTO \(table) VALUES ($1)", [7])
                }
            }
            #expect(error?.isUniqueViolation == true)
            #expect(try ids(in: table) == [7])
        }
    }

    @Test func savepointRollbackKeepsTheOuterTransaction() throws {
        try PostgresTestSupport.withTable("pp_txn_savepoint", columns: "id int PRIMARY KEY", on: connection) { table in
            try connection.transaction { connection in
                try connection.query("INSERT INTO \(table) VALUES ($1)", [1])
                let error = #expect(throws: PostgresError.self) {
                    try connection.savepoint { connection in
                        try connection.query("INSERT INTO \(table) VALUES ($1)", [2])
                        try connection.query("INSERT INTO \(table) VALUES ($1)", [1])  // duplicate
                    }
                }
                #expect(error?.isUniqueViolation == true)
                // Nested savepoints: the inner one is rolled back, the outer one released.
                try connection.savepoint { connection in
                    try connection.query("INSERT INTO \(table) VALUES ($1)", [3])
                    #expect(throws: Boom.self) {
                        try connection.savepoint { connection in
                            try connection.query("INSERT INTO \(table) VALUES ($1)", [4])
                            throw Boom()
                        }
                    }
                }
                try connection.query("INSERT INTO \(table) VALUES ($1)", [5])
            }
            #expect(try ids(in: table) == [1, 3, 5])
        }
    }

    @Test func misuseIsReported() throws {
        let outside = #expect(throws: PostgresError.self) { try connection.savepoint { _ in } }
        guard case .invalidUsage = outside else {
            Issue.record("expected .invalidUsage, got \(String(describing: outside))")
            return
        }
        try connection.transaction { connection in
            let nested = #expect(throws: PostgresError.self) { try connection.transaction { _ in } }
            guard case .invalidUsage = nested else {
                Issue.record("expected .invalidUsage, got \(String(describing: nested))")
                return
            }
        }
        #expect(!connection.isInTransaction)
    }

    @Test func swallowedStatementErrorsCannotCommit() throws {
        try PostgresTestSupport.withTable("pp_txn_swallow", columns: "id int PRIMARY KEY", on: connection) { table in
            let error = #expect(throws: PostgresError.self) {
                try connection.transaction { connection in
                    try connection.query("INSERT INTO \(table) VALUES ($1)", [1])
                    _ = try? connection.query("INSERT INTO \(table) VALUES ($1)", [1])
                }
            }
            guard case .transactionAborted = error else {
                Issue.record("expected .transactionAborted, got \(String(describing: error))")
                return
            }
            #expect(!connection.isInTransaction)
            let committed = try ids(in: table)
            #expect(committed == [])
        }
    }

    @Test func retriesSerializationFailuresUntilTheLimit() throws {
        var calls = 0
        let error = #expect(throws: PostgresError.self) {
            try connection.transaction(maxAttempts: 3) { _ in
                calls += 1
                throw PostgresError.server(sqlState: "40001", message: "could not serialize", detail: nil, constraint: nil)
            }
        }
        #expect(calls == 3)
        guard case .transactionRetriesExhausted(let attempts, let last) = error else {
            Issue.record("expected .transactionRetriesExhausted, got \(String(describing: error))")
            return
        }
        #expect(attempts == 3)
        #expect(last.contains("40001"))
        #expect(!connection.isInTransaction)
    }

    /// Two connections, SERIALIZABLE: the first reads, a second connection on another thread commits a
    /// conflicting update, the first's update then fails with 40001 and the retry succeeds on fresh data.
    @Test func retriesARealSerializationFailureAndSucceeds() throws {
        try PostgresTestSupport.withTable("pp_txn_serial", columns: "id int PRIMARY KEY, v int8 NOT NULL", on: connection) { table in
            try connection.query("INSERT INTO \(table) VALUES (1, 0)")
            var attempts = 0
            let final = try connection.transaction(isolation: .serializable) { connection -> Int in
                attempts += 1
                let value: Int = try connection.query("SELECT v FROM \(table) WHERE id = 1")[0].decode("v")
                if attempts == 1 {
                    let other = JoinableThread {
                        let second = try PostgresTestSupport.connect()
                        return try second.query("UPDATE \(table) SET v = v + 10 WHERE id = 1").affectedRows
                    }
                    #expect(try other.join() == 1)
                }
                try connection.query("UPDATE \(table) SET v = $1 WHERE id = 1", [value + 1])
                return value + 1
            }
            #expect(attempts == 2)
            #expect(final == 11)
            let stored: Int = try connection.query("SELECT v FROM \(table) WHERE id = 1")[0].decode("v")
            #expect(stored == 11)
        }
    }
}
