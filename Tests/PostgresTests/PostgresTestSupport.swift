import Foundation
import Postgres
import Synchronization

/// Shared helpers: the test server URL, fresh connections, unique table names and a joinable thread.
enum PostgresTestSupport {
    static var databaseURL: String {
        ProcessInfo.processInfo.environment["PAYPIPE_TEST_DATABASE_URL"]
            ?? "postgresql://postgres@127.0.0.1:5432/paypipe_test"
    }

    static func connect() throws -> PostgresConnection {
        try PostgresConnection(configuration: PostgresConfiguration(url: databaseURL))
    }

    /// A table name no other test (or helper sharing the server) will use.
    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)_\(UInt64.random(in: 0...UInt64.max) & 0xFFFF_FFFF_FFFF)"
    }

    /// Creates a table with `columns`, runs `body`, and drops the table whatever happens.
    static func withTable<T>(_ prefix: String, columns: String, on connection: PostgresConnection,
                             _ body: (String) throws -> T) throws -> T
    {
        let table = uniqueName(prefix)
        try connection.simpleQuery("CREATE TABLE \(table) (\(columns))")
        defer { try? dropTable(table) }
        return try body(table)
    }

    /// Drops on a fresh connection so cleanup works even when the test's connection is broken or mid-transaction.
    static func dropTable(_ table: String) throws {
        let connection = try connect()
        try connection.simpleQuery("DROP TABLE IF EXISTS \(table)")
    }
}

/// A Foundation thread whose result can be awaited: the tests need a second connection on another thread,
/// independent of Swift's cooperative pool (which has only two threads on this machine).
final class JoinableThread<T: Sendable>: Sendable {
    private let result = Mutex<Result<T, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () throws -> T) {
        let thread = Thread { [self] in
            let outcome = Result { try body() }
            result.withLock { $0 = outcome }
            done.signal()
        }
        thread.start()
    }

    /// Waits for the thread (at most `timeout` seconds) and returns its value or rethrows its error.
    func join(timeout: Double = 30) throws -> T {
        guard done.wait(timeout: .now() + timeout) == .success else { throw JoinTimeout() }
        done.signal()
        return try result.withLock { $0! }.get()
    }

    struct JoinTimeout: Error {}
}
