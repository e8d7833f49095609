import Foundation
import Postgres
import Testing

/// Multi-host URLs go to libpq as they are: it skips a host that is down, honours `target_session_attrs`, and a
/// reconnect walks the list again (which is how a worker finds the new primary after a failover).
@Suite("Multi-host connections and COMMIT outcomes")
struct PostgresFailoverTests {
    /// The test server behind a host nobody listens on (port 1 on loopback refuses at once).
    private func configurationWithDeadFirstHost(_ attributes: String) throws -> PostgresConfiguration {
        var configuration = try PostgresConfiguration(url: PostgresTestSupport.databaseURL)
        configuration.additionalParameters["target_session_attrs"] = attributes
        configuration.endpoints = [PostgresEndpoint(host: "127.0.0.1", port: 1), try #require(configuration.endpoints.first)]
        return configuration
    }

    @Test func skipsADeadHostAndReconnectsThroughTheList() throws {
        let configuration = try configurationWithDeadFirstHost("read-write")
        #expect(configuration.redactedURL.contains("127.0.0.1:1,"))
        let connection = try PostgresConnection(configuration: configuration)
        let pid = try #require(connection.backendPID)
        #expect(try connection.query("SELECT pg_is_in_recovery() AS standby")[0].decode("standby", as: Bool.self) == false)

        let killer = try PostgresTestSupport.connect()
        try killer.query("SELECT pg_terminate_backend($1, $2)", [pid, Int64(5_000)])
        #expect(throws: PostgresError.self) { try connection.query("SELECT 1 AS one") }
        try connection.reconnect()
        #expect(connection.backendPID != pid)
        #expect(try connection.query("SELECT $1::int8 AS one", [1])[0].decode("one", as: Int.self) == 1)
    }

    /// The attribute reaches libpq: asking for a standby where there is only a primary fails to connect.
    @Test func targetSessionAttributesAreEnforcedByLibpq() throws {
        let error = #expect(throws: PostgresError.self) {
            try PostgresConnection(configuration: try configurationWithDeadFirstHost("standby"))
        }
        guard case .connectionFailed = error else {
            Issue.record("expected .connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(error?.isConnectionProblem == true)
    }

    /// A session terminated while its COMMIT runs (a failover, an administrator) leaves the outcome unknown: the error
    /// says so, is a connection problem (the runtime holds the batch, reconnects and re-runs it, re-reading what it
    /// wrote), and never claims the transaction rolled back.
    @Test func aCommitWithoutAnAnswerHasAnUnknownOutcome() throws {
        let connection = try PostgresTestSupport.connect()
        let pid = try #require(connection.backendPID)
        try PostgresTestSupport.withTable("pp_commit_unknown", columns: "id int8 PRIMARY KEY", on: connection) { table in
            // A deferred constraint trigger runs inside COMMIT: it holds the COMMIT long enough to terminate it.
            try connection.simpleQuery("""
                CREATE FUNCTION \(table)_slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(30); RETURN NULL; END $$;
                CREATE CONSTRAINT TRIGGER \(table)_at_commit AFTER INSERT ON \(table) DEFERRABLE INITIALLY DEFERRED
                  FOR EACH ROW EXECUTE FUNCTION \(table)_slow();
                """)
            defer { try? PostgresTestSupport.connect().simpleQuery("DROP FUNCTION IF EXISTS \(table)_slow() CASCADE") }
            let killer = JoinableThread { () throws -> Bool in
                let other = try PostgresTestSupport.connect()
                let deadline = Date().addingTimeInterval(20)
                while Date() < deadline {
                    let waiting = try other.query(
                        "SELECT count(*) AS n FROM pg_stat_activity WHERE pid = $1 AND query = 'COMMIT' AND state = 'active'", [pid])
                    if try waiting[0].decode("n", as: Int.self) == 1 {
                        return try other.query("SELECT pg_terminate_backend($1) AS ok", [pid])[0].decode("ok", as: Bool.self)
                    }
                    Thread.sleep(forTimeInterval: 0.05)
                }
                return false
            }
            let error = #expect(throws: PostgresError.self) {
                try connection.transaction { transaction in
                    try transaction.query("INSERT INTO \(table) (id) VALUES ($1)", [Int64(1)])
                }
            }
            #expect(try killer.join() == true)
            guard case .commitOutcomeUnknown = error else {
                Issue.record("expected .commitOutcomeUnknown, got \(String(describing: error))")
                return
            }
            #expect(error?.isConnectionProblem == true)
            #expect(error?.description.contains("outcome unknown") == true)
            // Re-reading on a new session is the only way to learn the outcome (here: terminated before it committed).
            let reader = try PostgresTestSupport.connect()
            #expect(try reader.query("SELECT count(*) AS n FROM \(table)")[0].decode("n", as: Int.self) == 0)
        }
    }

    /// A definite refusal at COMMIT (a deferred unique constraint) is not "unknown": the session answered.
    @Test func aCommitTheServerRefusedIsNotUnknown() throws {
        let connection = try PostgresTestSupport.connect()
        try PostgresTestSupport.withTable(
            "pp_commit_refused", columns: "id int8, CONSTRAINT one_id UNIQUE (id) DEFERRABLE INITIALLY DEFERRED", on: connection
        ) { table in
            let error = #expect(throws: PostgresError.self) {
                try connection.transaction { transaction in
                    try transaction.query("INSERT INTO \(table) (id) VALUES ($1), ($1)", [Int64(7)])
                }
            }
            #expect(error?.isUniqueViolation == true, "\(String(describing: error))")
            #expect(connection.isConnected)
        }
    }
}
