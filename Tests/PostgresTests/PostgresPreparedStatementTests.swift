import Postgres
import Testing

@Suite("Prepared-statement cache")
struct PostgresPreparedStatementTests {
    let connection: PostgresConnection

    init() throws {
        connection = try PostgresTestSupport.connect()
    }

    /// Names of this session's prepared statements whose text is `sql`.
    private func preparedNames(for sql: String) throws -> [String] {
        var names: [String] = []
        for row in try connection.query("SELECT name FROM pg_prepared_statements WHERE statement = $1", [sql]) {
            names.append(try row.decode("name"))
        }
        return names
    }

    @Test func preparesOnceAndReusesTheStatement() throws {
        let sql = "SELECT $1::int8 + 1 AS n -- \(PostgresTestSupport.uniqueName("reuse"))"
        let before = connection.cachedStatementCount
        for value in 1...3 {
            #expect(try connection.query(sql, [value])[0].decode("n", as: Int.self) == value + 1)
        }
        let names = try preparedNames(for: sql)
        #expect(names.count == 1)
        #expect(names.first?.hasPrefix("pp_") == true)
        // The statement above plus the pg_prepared_statements lookup.
        #expect(connection.cachedStatementCount == before + 2)
        let generic = try connection.query(
            "SELECT generic_plans + custom_plans AS executions FROM pg_prepared_statements WHERE statement = $1", [sql])
        #expect(try generic[0].decode("executions", as: Int.self) == 3)
    }

    @Test func syntaxErrorsSurfaceAndAreNotCached() throws {
        let before = connection.cachedStatementCount
        let error = #expect(throws: PostgresError.self) { try connection.query("SELEC $1::int8", [1]) }
        #expect(error?.sqlState == "42601")
        #expect(error.map { "\($0)" }?.contains("SELEC") == true)
        #expect(connection.cachedStatementCount == before)
        #expect(try connection.query("SELECT 1 AS one")[0].decode("one", as: Int.self) == 1)
    }

    @Test func reprepareWhenATableChangesShape() throws {
        try PostgresTestSupport.withTable("pp_reshape", columns: "a int", on: connection) { table in
            try connection.query("INSERT INTO \(table) VALUES (1)")
            let sql = "SELECT * FROM \(table)"
            #expect(try connection.query(sql).columns.count == 1)
            try connection.simpleQuery("ALTER TABLE \(table) ADD COLUMN b text DEFAULT 'x'")
            let rows = try connection.query(sql)
            #expect(rows.columns.map(\.name) == ["a", "b"])
            #expect(try rows[0].decode("b", as: String.self) == "x")
        }
    }

    @Test func reconnectClearsTheCache() throws {
        let sql = "SELECT $1::text AS s -- \(PostgresTestSupport.uniqueName("reconnect"))"
        try connection.query(sql, ["a"])
        #expect(try preparedNames(for: sql).count == 1)
        try connection.reconnect()
        #expect(connection.cachedStatementCount == 0)
        #expect(try preparedNames(for: sql).isEmpty)
        #expect(try connection.query(sql, ["b"])[0].decode("s", as: String.self) == "b")
        #expect(try preparedNames(for: sql).count == 1)
    }

    @Test func statementsBeyondTheCapacityRunUnprepared() throws {
        var configuration = try PostgresConfiguration(url: PostgresTestSupport.databaseURL)
        configuration.preparedStatementCacheCapacity = 1
        let small = try PostgresConnection(configuration: configuration)
        try small.query("SELECT $1::int8 AS a", [1])
        #expect(try small.query("SELECT $1::int8 AS b", [2])[0].decode("b", as: Int.self) == 2)
        #expect(small.cachedStatementCount == 1)
        let count = try small.query("SELECT count(*) AS n FROM pg_prepared_statements")[0].decode("n", as: Int.self)
        #expect(count == 1)
    }
}
