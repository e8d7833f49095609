import Foundation
import Pipeline
import Postgres
import Synchronization
import Testing

/// ``BatchTransaction`` against the real PostgreSQL: one transaction per batch, savepoints only after a failure.
extension Integration {
@Suite struct BatchTransactionTests {

    /// A scratch table (dropped afterwards) and a counter of body runs per item.
    static func withTable(_ body: (PostgresConnection, String) throws -> Void) throws {
        let connection = try TestServices.database()
        let table = "batch_tx_\(UInt32.random(in: 0...UInt32.max))"
        try connection.simpleQuery("CREATE TABLE \(table) (id int PRIMARY KEY)")
        defer { try? connection.simpleQuery("DROP TABLE IF EXISTS \(table)") }
        try body(connection, table)
    }

    static func rows(_ table: String, on connection: PostgresConnection) throws -> [Int32] {
        try connection.query("SELECT id FROM \(table) ORDER BY id").map { try $0.decode("id", as: Int32.self) }
    }

    /// The one-path form: a set-based body that fails on one item (a unique violation aborting the statement) runs
    /// again, the same body, on halves in savepoints, down to the single item, whose error alone stands; everything
    /// else commits in the same (second) transaction.
    @Test func theWholeBatchBodyRunsAgainOnHalvesDownToTheFailingItem() throws {
        try Self.withTable { connection, table throws in
            try connection.query("INSERT INTO \(table) (id) VALUES (6)")
            let calls = Mutex<[[Int32]]>([])
            let results = BatchTransaction.run(batch: Array(Int32(1)...8), on: connection) { ids, transaction in
                calls.withLock { $0.append(ids) }
                try transaction.query("INSERT INTO \(table) (id) SELECT unnest($1::int[])", [PostgresArray(ids)])
                return ids.map { $0 * 10 }
            }
            #expect(results.map { try? $0.get() } == [10, 20, 30, 40, 50, nil, 70, 80])
            #expect(throws: PostgresError.self) { try results[5].get() }
            #expect(calls.withLock { $0 } == [[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8], [5, 6], [5], [6], [7, 8]])
            #expect(try Self.rows(table, on: connection) == [1, 2, 3, 4, 5, 6, 7, 8])
        }
    }

    /// A body that succeeds commits the batch in one transaction, one run; a single item's batch that fails is not
    /// run again (there is nothing smaller), and a failed commit fails every item.
    @Test func theWholeBatchFormRunsOnceWhenItSucceedsAndNeverSplitsOneItem() throws {
        try Self.withTable { connection, table throws in
            let calls = Mutex(0)
            let results = BatchTransaction.run(batch: [1, 2, 3] as [Int32], on: connection) { ids, transaction in
                calls.withLock { $0 += 1 }
                try transaction.query("INSERT INTO \(table) (id) SELECT unnest($1::int[])", [PostgresArray(ids)])
                return ids
            }
            #expect(results.map { try? $0.get() } == [1, 2, 3] && calls.withLock { $0 } == 1)
            let single = BatchTransaction.run(batch: [1] as [Int32], on: connection) { ids, transaction -> [Int32] in
                calls.withLock { $0 += 1 }
                try transaction.query("INSERT INTO \(table) (id) SELECT unnest($1::int[])", [PostgresArray(ids)])
                return ids
            }
            #expect(throws: PostgresError.self) { try single[0].get() }
            #expect(calls.withLock { $0 } == 2)
            // A deferred constraint fails at COMMIT: nothing was applied, every item gets the error.
            try connection.simpleQuery("ALTER TABLE \(table) ADD COLUMN ref int REFERENCES \(table)(id) DEFERRABLE INITIALLY DEFERRED")
            let uncommitted = BatchTransaction.run(batch: [10, 11] as [Int32], on: connection) { ids, transaction in
                try transaction.query("INSERT INTO \(table) (id, ref) SELECT unnest($1::int[]), 999", [PostgresArray(ids)])
                return ids
            }
            #expect(uncommitted.allSatisfy { (try? $0.get()) == nil })
            #expect(try Self.rows(table, on: connection) == [1, 2, 3])
        }
    }
}
}
