import Postgres

/// Runs one unit of work per item of a batch in a single transaction: one commit (one fsync) for the batch.
///
/// Why two passes: a savepoint per item costs two extra statements (`SAVEPOINT`, `RELEASE`) per message, a large
/// share of a stage's database work. Almost every batch succeeds as a whole, so the first pass runs every item
/// without savepoints. If any item throws, that transaction is rolled back — nothing of the batch is applied — and
/// the batch is run again with a savepoint per item, so the failing item rolls back alone and the others commit.
/// Bodies must therefore be safe to run twice (database work only, no network I/O; the transaction is rolled back
/// in between), which every stage body already is because redeliveries re-run it.
public enum BatchTransaction {
    /// Abandons the first pass.
    private struct ItemFailed: Error {}

    /// One result per item, in order, each item's body in a savepoint on the second pass. When the transaction itself
    /// fails (BEGIN, COMMIT, the connection), every item gets that error: nothing of the batch was applied.
    public static func run<Item, Value>(
        _ items: [Item], on database: PostgresConnection, _ body: (Item, PostgresConnection) throws -> Value
    ) -> [Result<Value, any Error>] {
        run(items, on: database, fastPath: { item, transaction in .success(try body(item, transaction)) },
            isolated: { item, transaction in Result { try transaction.savepoint { try body(item, $0) } } }
        ).map { outer in outer.flatMap { $0 } }
    }

    /// The general form: `fastPath` runs every item without savepoints (throwing abandons the pass); `isolated` is the
    /// second pass's body for one item, which takes its own savepoints and turns its failures into a `Value`.
    public static func run<Item, Value>(
        _ items: [Item], on database: PostgresConnection,
        fastPath: (Item, PostgresConnection) throws -> Value,
        isolated: (Item, PostgresConnection) -> Value
    ) -> [Result<Value, any Error>] {
        guard !items.isEmpty else { return [] }
        do {
            let values = try database.transaction { transaction in
                try items.map { item in
                    do {
                        return try fastPath(item, transaction)
                    } catch {
                        throw ItemFailed()
                    }
                }
            }
            return values.map { Result<Value, any Error>.success($0) }
        } catch is ItemFailed {
            // Pass 2 below: the rolled-back batch again, each item isolated.
        } catch {
            return Array(repeating: .failure(error), count: items.count)
        }
        do {
            return try database.transaction { transaction in
                items.map { .success(isolated($0, transaction)) }
            }
        } catch {
            return Array(repeating: .failure(error), count: items.count)
        }
    }
}
