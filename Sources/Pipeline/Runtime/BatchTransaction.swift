import Postgres

/// Runs one unit of work per item of a batch in a single transaction: one commit (one fsync) for the batch.
///
/// Why two passes: a savepoint per item costs two extra statements (`SAVEPOINT`, `RELEASE`) per message, a large
/// share of a stage's database work. Almost every batch succeeds as a whole, so the first pass runs every item
/// without savepoints. If an item throws, that transaction is rolled back — nothing of the batch is applied — and
/// the batch is run again with a savepoint per item, except that the item that threw is not run again: its error
/// stands (handed to `failed`), as it would have with a savepoint. So the failing item's body runs exactly once, and
/// the items before it run twice (the first run rolled back): bodies must be database work only, which every stage
/// body already is because redeliveries re-run it.
public enum BatchTransaction {
    /// Abandons the first pass, remembering which item threw what.
    private struct ItemFailed: Error {
        let index: Int
        let error: any Error
    }

    /// Abandons the first pass because the set-based part failed.
    private struct BulkFailed: Error {
        let error: any Error
    }

    /// One result per item, in order; the second pass runs each item's body in a savepoint. When the transaction
    /// itself fails (BEGIN, COMMIT, the connection), every item gets that error: nothing of the batch was applied.
    /// `bulk`, when given, is the set-based first step of the general form below.
    public static func run<Item, Value>(
        _ items: [Item], on database: PostgresConnection, bulk: (([Item], PostgresConnection) throws -> [Value?])? = nil,
        _ body: (Item, PostgresConnection) throws -> Value
    ) -> [Result<Value, any Error>] {
        run(items, on: database,
            bulk: bulk.map { bulk in { items, transaction in try bulk(items, transaction).map { $0.map { .success($0) } } } },
            fastPath: { item, transaction in .success(try body(item, transaction)) },
            isolated: { item, transaction in Result { try transaction.savepoint { try body(item, $0) } } },
            failed: { _, error, _ in .failure(error) }
        ).map { outer in outer.flatMap { $0 } }
    }

    /// The general form: `fastPath` runs every item without savepoints (throwing abandons the pass); on the second
    /// pass `isolated` handles each item (taking its own savepoints, turning its failures into a `Value`) and
    /// `failed` turns the error of the item that abandoned the first pass into its `Value`, inside the transaction
    /// (e.g. to record a permanent failure).
    ///
    /// `bulk`, when given, opens the first pass: one set-based call for the whole batch (a few statements instead of a
    /// few per item) that returns a value for the items it settled and `nil` for those it leaves to `fastPath`, which
    /// then runs for them in order, in the same transaction. If `bulk` throws, the first pass is abandoned and every
    /// item goes through `isolated` on the second pass (no item's error stands: the set-based statement failed as a
    /// whole, e.g. on a unique violation that one item's savepoint will pin down).
    public static func run<Item, Value>(
        _ items: [Item], on database: PostgresConnection,
        bulk: (([Item], PostgresConnection) throws -> [Value?])? = nil,
        fastPath: (Item, PostgresConnection) throws -> Value,
        isolated: (Item, PostgresConnection) -> Value,
        failed: (Item, any Error, PostgresConnection) -> Value
    ) -> [Result<Value, any Error>] {
        guard !items.isEmpty else { return [] }
        let failure: ItemFailed?
        do {
            let values = try database.transaction { transaction in
                var settled: [Value?]
                do {
                    settled = try bulk?(items, transaction) ?? Array(repeating: nil, count: items.count)
                } catch {
                    throw BulkFailed(error: error)
                }
                precondition(settled.count == items.count, "bulk must return one entry per item")
                for index in items.indices where settled[index] == nil {
                    do {
                        settled[index] = try fastPath(items[index], transaction)
                    } catch {
                        throw ItemFailed(index: index, error: error)
                    }
                }
                return settled.map { $0! }
            }
            return values.map { Result<Value, any Error>.success($0) }
        } catch let itemFailed as ItemFailed {
            failure = itemFailed
        } catch is BulkFailed {
            failure = nil
        } catch {
            return Array(repeating: .failure(error), count: items.count)
        }
        do {
            return try database.transaction { transaction in
                items.indices.map { index in
                    if let failure, index == failure.index {
                        return .success(failed(items[index], failure.error, transaction))
                    }
                    return .success(isolated(items[index], transaction))
                }
            }
        } catch {
            return Array(repeating: .failure(error), count: items.count)
        }
    }
}
