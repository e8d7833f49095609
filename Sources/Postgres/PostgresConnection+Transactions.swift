import Foundation

extension PostgresConnection {
    /// Runs `body` between `BEGIN` and `COMMIT`.
    ///
    /// On a serialization failure (40001) or deadlock (40P01) — thrown by `body` or by `COMMIT` — the transaction
    /// is rolled back and the whole body runs again, up to `maxAttempts` times in total, after a short jittered
    /// backoff so that the conflicting transactions do not collide again in lockstep. `body` must therefore be
    /// safe to re-run: keep side effects outside the database (publishing, HTTP) out of it. Any other error rolls
    /// back and is rethrown unchanged; a `COMMIT` that got no answer throws `.commitOutcomeUnknown` (reconnect and
    /// re-read: it may have committed). A body that swallows a statement error cannot commit: the transaction is
    /// rolled back and `.transactionAborted` thrown.
    ///
    /// - Parameter isolation: nil keeps the server default (read committed).
    public func transaction<T>(
        isolation: PostgresIsolationLevel? = nil,
        maxAttempts: Int = 5,
        _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        guard !isInTransaction else {
            throw PostgresError.invalidUsage("transaction() called inside an open transaction; use savepoint() to nest")
        }
        let attempts = max(1, maxAttempts)
        var attempt = 1
        while true {
            try simpleQuery(isolation.map { "BEGIN ISOLATION LEVEL \($0.rawValue)" } ?? "BEGIN")
            do {
                let value = try body(self)
                try commit()
                return value
            } catch {
                rollbackIfOpen()
                guard let failure = error as? PostgresError, failure.isSerializationFailureOrDeadlock else {
                    throw error
                }
                guard attempt < attempts else {
                    throw PostgresError.transactionRetriesExhausted(attempts: attempt, last: failure.description)
                }
                attempt += 1
                Self.backOff(beforeAttempt: attempt)
            }
        }
    }

    /// Inside a transaction: runs `body` after `SAVEPOINT`, then `RELEASE`s it; if `body` throws, rolls back to
    /// the savepoint and rethrows, leaving the outer transaction usable. Savepoints nest.
    ///
    /// Typical use: try an insert that may hit a unique violation without losing the rest of the transaction.
    public func savepoint<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        guard isInTransaction else {
            throw PostgresError.invalidUsage("savepoint() needs an open transaction; call it inside transaction()")
        }
        guard !isInFailedTransaction else {
            throw PostgresError.transactionAborted("cannot start a savepoint: a statement in the transaction already failed")
        }
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "pp_savepoint_\(savepointDepth)"
        try simpleQuery("SAVEPOINT \(name)")
        do {
            let value = try body(self)
            guard !isInFailedTransaction else {
                throw PostgresError.transactionAborted(
                    "a statement inside the savepoint failed but the error was not propagated; rolled back to the savepoint")
            }
            try simpleQuery("RELEASE SAVEPOINT \(name)")
            return value
        } catch {
            if isInTransaction {
                try? simpleQuery("ROLLBACK TO SAVEPOINT \(name)")
                try? simpleQuery("RELEASE SAVEPOINT \(name)")
            }
            throw error
        }
    }

    private func commit() throws(PostgresError) {
        guard !isInFailedTransaction else {
            throw .transactionAborted("a statement in the transaction failed but the error was not propagated; rolled back")
        }
        // COMMIT of a failed transaction reports success with the tag ROLLBACK; the check above should make
        // that impossible, and this one makes sure.
        let rows: PostgresRows
        do {
            rows = try query("COMMIT")
        } catch where error.isConnectionProblem {
            // The server may have committed before the answer was lost. A definite refusal (a serialization
            // failure, a deferred constraint) is a server error on a live session and stays what it is.
            throw .commitOutcomeUnknown(error.description)
        }
        guard rows.commandTag == "COMMIT" else {
            throw .transactionAborted("the server rolled the transaction back instead of committing it")
        }
    }

    /// Best effort: after a lost connection there is nothing to roll back, and the error being handled matters more.
    private func rollbackIfOpen() {
        if isInTransaction {
            try? simpleQuery("ROLLBACK")
        }
    }

    /// Sleeps a random 50–100 % of 5 ms × 2^(attempt − 2), capped at 200 ms.
    private static func backOff(beforeAttempt attempt: Int) {
        let ceiling = min(0.2, 0.005 * Double(1 << min(attempt - 2, 10)))
        Thread.sleep(forTimeInterval: Double.random(in: (ceiling / 2)...ceiling))
    }
}

/// The isolation level a transaction starts with (`BEGIN ISOLATION LEVEL …`).
///
/// `.serializable` and `.repeatableRead` can fail with SQLSTATE 40001 when transactions conflict;
/// `PostgresConnection.transaction` retries those failures by re-running the whole body.
public enum PostgresIsolationLevel: String, Sendable {
    case readCommitted = "READ COMMITTED"
    case repeatableRead = "REPEATABLE READ"
    case serializable = "SERIALIZABLE"
}
