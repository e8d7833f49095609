import Postgres

/// Runs a batch in a single transaction: one commit (one fsync) for the batch.
///
/// The one-path form, ``run(batch:on:_:)``, hands the whole batch to one
/// body — a stage's read → decide → apply — that settles it in a few set-based statements. Almost every batch succeeds
/// as a whole. If the body throws (a set-based statement failed, e.g. on a unique violation or a concurrent change),
/// the transaction is rolled back, and the *same* body runs again in a new transaction on halves of the batch, each in
/// its own savepoint, halving again whatever half still throws, down to single items, whose error then stands. So one
/// bad item loses only its own work, no second implementation exists for the fallback, and a batch with one bad item
/// costs about 2·log₂(n) extra runs of the body. Bodies must be database work only (a rolled-back run leaves nothing).
///
/// The older per-item forms below serve the stages that still settle some of their items one by one (submit, notify).
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

    /// One result per item, in order, each the body's value for it or the error of the smallest part of the batch that
    /// failed with it. When the transaction itself fails (BEGIN, COMMIT, the connection), every item not yet settled
    /// gets that error: nothing of the batch was applied.
    public static func run<Item, Value>(
        batch items: [Item], on database: PostgresConnection, _ body: ([Item], PostgresConnection) throws -> [Value]
    ) -> [Result<Value, any Error>] {
        guard !items.isEmpty else { return [] }
        let failure: any Error
        do {
            return try database.transaction { try checked(body(items, $0), items.count) }.map { .success($0) }
        } catch {
            failure = error
        }
        guard items.count > 1 else { return [.failure(failure)] }
        do {
            return try database.transaction { transaction in
                var results: [Result<Value, any Error>] = []
                results.reserveCapacity(items.count)
                isolate(items[...], on: transaction, body, into: &results)
                return results
            }
        } catch {
            return Array(repeating: .failure(error), count: items.count)
        }
    }

    /// Runs each half of `items` (which failed as a whole) in a savepoint, splitting a failing half further.
    private static func isolate<Item, Value>(
        _ items: ArraySlice<Item>, on transaction: PostgresConnection, _ body: ([Item], PostgresConnection) throws -> [Value],
        into results: inout [Result<Value, any Error>]
    ) {
        let middle = items.startIndex + items.count / 2
        for half in [items[..<middle], items[middle...]] {
            do {
                let values = try transaction.savepoint { try checked(body(Array(half), $0), half.count) }
                results.append(contentsOf: values.map { .success($0) })
            } catch {
                if half.count == 1 {
                    results.append(.failure(error))
                } else {
                    isolate(half, on: transaction, body, into: &results)
                }
            }
        }
    }

    private static func checked<Value>(_ values: [Value], _ count: Int) -> [Value] {
        precondition(values.count == count, "a batch body returns one value per item")
        return values
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
