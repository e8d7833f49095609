import Postgres

/// How many statements a connection executed, from its prepared statements' plan counts (every execution plans once,
/// generic or custom): the figure the set-based paths keep independent of the batch size.
enum StatementCounter {
    static func executed(on connection: PostgresConnection) throws -> Int64 {
        try connection.query("SELECT coalesce(sum(generic_plans + custom_plans), 0)::bigint AS n FROM pg_prepared_statements")[0]
            .decode("n", as: Int64.self)
    }

    /// Runs `body` on `connection` and returns its value with the statements it executed (the counting excluded).
    static func counting<T>(on connection: PostgresConnection, _ body: () throws -> T) throws -> (value: T, statements: Int64) {
        let before = try executed(on: connection)
        let value = try body()
        return (value, try executed(on: connection) - before - 1)
    }
}
