import Foundation
import Postgres
import Testing

@Suite("Connection loss and reconnect")
struct PostgresReconnectTests {
    /// Terminates `pid` from another connection and waits until the backend is gone.
    private func terminate(_ pid: Int32) throws {
        let killer = try PostgresTestSupport.connect()
        let rows = try killer.query("SELECT pg_terminate_backend($1, $2) AS ok", [pid, Int64(5_000)])
        #expect(try rows[0].decode("ok", as: Bool.self))
    }

    @Test func detectsATerminatedBackendAndReconnects() throws {
        let connection = try PostgresTestSupport.connect()
        let pid = try #require(connection.backendPID)
        #expect(connection.isConnected)
        try terminate(pid)

        let deadline = Date().addingTimeInterval(5)
        while connection.isConnected, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(!connection.isConnected)

        let error = #expect(throws: PostgresError.self) { try connection.query("SELECT 1 AS one") }
        guard case .connectionLost = error else {
            Issue.record("expected .connectionLost, got \(String(describing: error))")
            return
        }
        #expect(error?.isConnectionProblem == true)

        try connection.reconnect()
        #expect(connection.isConnected)
        #expect(connection.backendPID != pid)
        #expect(try connection.query("SELECT $1::int8 AS one", [1])[0].decode("one", as: Int.self) == 1)
    }

    @Test func aQueryOnATerminatedBackendFailsAsAConnectionProblem() throws {
        let connection = try PostgresTestSupport.connect()
        try connection.query("SELECT $1::int8 AS warm", [1])  // cached statement, executed next on a dead session
        try terminate(try #require(connection.backendPID))
        let error = #expect(throws: PostgresError.self) { try connection.query("SELECT $1::int8 AS warm", [1]) }
        #expect(error?.isConnectionProblem == true)
        #expect(!connection.isConnected)
        try connection.reconnect()
        #expect(try connection.query("SELECT $1::int8 AS warm", [2])[0].decode("warm", as: Int.self) == 2)
    }

    @Test func transactionOnALostConnectionRethrowsTheConnectionProblem() throws {
        let connection = try PostgresTestSupport.connect()
        let pid = try #require(connection.backendPID)
        let error = #expect(throws: PostgresError.self) {
            try connection.transaction { connection in
                try terminate(pid)
                try connection.query("SELECT 1 AS one")
            }
        }
        #expect(error?.isConnectionProblem == true)
        try connection.reconnect()
        #expect(!connection.isInTransaction)
    }

    @Test func closedConnectionThrowsUntilReconnected() throws {
        let connection = try PostgresTestSupport.connect()
        connection.close()
        #expect(!connection.isConnected)
        #expect(connection.backendPID == nil)
        let error = #expect(throws: PostgresError.self) { try connection.query("SELECT 1") }
        #expect(error == .connectionLost("the connection was closed"))
        try connection.reconnect()
        #expect(connection.isConnected)
    }

    @Test func refusedConnectionFailsWithConnectionFailed() throws {
        let start = Date()
        let error = #expect(throws: PostgresError.self) {
            try PostgresConnection(configuration: PostgresConfiguration(url: "postgresql://postgres@127.0.0.1:1/paypipe_test"))
        }
        guard case .connectionFailed(let message) = error else {
            Issue.record("expected .connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(message.contains("127.0.0.1"))
        #expect(error?.isConnectionProblem == true)
        #expect(Date().timeIntervalSince(start) < 5)
    }
}
