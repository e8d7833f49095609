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
public enum BatchTransaction {
    /// ``run(batch:on:_:)`` with each error classified (``FailureClassifier``): every stage phase's transaction.
    public static func settle<Item, Value>(
        _ items: [Item], on database: PostgresConnection, _ body: ([Item], PostgresConnection) throws -> [Value]
    ) -> [Result<Value, StageFailure>] {
        run(batch: items, on: database, body).map { $0.mapError(FailureClassifier.classify) }
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
}
