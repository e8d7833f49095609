import CLibPQ
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One libpq connection.
///
/// Not `Sendable`: a connection belongs to one owner (thread) at a time, because libpq connections are not
/// thread-safe and a statement, its transaction and its prepared-statement cache form one conversation.
/// Create it where it is used, or hand it over whole (`sending`).
///
/// Every statement is parameterised (`$1`, `$2`, …). Statements are prepared once per connection and then
/// executed by name, which saves the server a parse and plan per call; the cache is keyed by SQL text and
/// parameter types and is cleared whenever the session is replaced (`reconnect`). Results are copied into
/// `PostgresRows` so nothing returned refers to libpq memory.
public final class PostgresConnection {
    public let configuration: PostgresConfiguration
    /// nil once `close()` was called.
    private var handle: OpaquePointer?
    private var statements: PostgresPreparedStatementCache
    /// Nesting depth of `savepoint` calls, which names each level's savepoint.
    var savepointDepth = 0

    /// Connects (blocking, up to `connectTimeoutSeconds`) with PayPipe's fixed session settings.
    public init(configuration: PostgresConfiguration) throws(PostgresError) {
        self.configuration = configuration
        self.statements = PostgresPreparedStatementCache(capacity: configuration.preparedStatementCacheCapacity)
        self.handle = try Self.connect(configuration)
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    // MARK: Statements

    /// Runs one statement with `$n` parameters and returns its rows (empty for commands).
    ///
    /// The first call with a given SQL text prepares it (`PQprepare`, name `pp_<n>`); later calls only execute
    /// it (`PQexecPrepared`). A prepare error — a syntax error, an unknown table — is thrown and nothing is
    /// cached. If a table changed shape under a cached statement, the statement is prepared afresh (outside a
    /// transaction; inside one, the error is thrown and the next call re-prepares).
    @discardableResult
    public func query(_ sql: String, _ bindings: [any PostgresBindable] = []) throws(PostgresError) -> PostgresRows {
        try Self.checkStatementText(sql)
        let parameters = try PostgresParameterList(bindings)
        let handle = try openHandle()
        let key = PostgresPreparedStatementCache.Key(sql: sql, types: parameters.types)
        if let name = statements[key] {
            do throws(PostgresError) {
                return try execute(prepared: name, parameters, on: handle)
            } catch {
                guard error.isStalePreparedStatement else { throw error }
                statements.remove(key)
                guard PQtransactionStatus(handle) == PQTRANS_IDLE else { throw error }
                try? discardResult(of: PQexec(handle, "DEALLOCATE \(name)"), on: handle)
            }
        }
        guard let name = try prepareIfRoom(sql, key: key, parameters: parameters, on: handle) else {
            return try execute(unprepared: sql, parameters, on: handle)
        }
        return try execute(prepared: name, parameters, on: handle)
    }

    /// Runs SQL text without parameters through the simple query protocol; it may hold several statements
    /// separated by semicolons (migrations). Never put values into this text: use `query` for anything with data.
    public func simpleQuery(_ sql: String) throws(PostgresError) {
        try Self.checkStatementText(sql)
        let handle = try openHandle()
        try discardResult(of: PQexec(handle, sql), on: handle)
    }

    /// How many prepared statements this session holds.
    public var cachedStatementCount: Int { statements.count }

    // MARK: Connection state

    /// Whether the session is usable. Reads whatever the server sent while idle, so a connection the server
    /// closed (restart, `pg_terminate_backend`, idle timeout) reports false without running a statement.
    public var isConnected: Bool {
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return false }
        let socket = PQsocket(handle)
        guard socket >= 0 else { return false }
        // A terminated backend sends an error message and then closes: the first read may return the message,
        // the next one the end of the stream, after which libpq marks the connection bad.
        for _ in 0..<4 {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 0) > 0 else { break }
            guard PQconsumeInput(handle) != 0, PQstatus(handle) == CONNECTION_OK else { return false }
        }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// True between `BEGIN` and `COMMIT`/`ROLLBACK`, including after a failed statement in the transaction.
    public var isInTransaction: Bool {
        guard let handle else { return false }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// True when a statement in the current transaction failed, so only `ROLLBACK` (to a savepoint) is accepted.
    var isInFailedTransaction: Bool {
        handle.map { PQtransactionStatus($0) == PQTRANS_INERROR } ?? false
    }

    /// The server process serving this session (for `pg_stat_activity` / `pg_terminate_backend`); nil when closed.
    public var backendPID: Int32? {
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return nil }
        return PQbackendPID(handle)
    }

    /// Replaces the session with a new one (same configuration). The prepared-statement cache is cleared, since
    /// the new session has none; any open transaction is lost.
    public func reconnect() throws(PostgresError) {
        statements.removeAll()
        savepointDepth = 0
        guard let handle else {
            self.handle = try Self.connect(configuration)
            return
        }
        PQreset(handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            throw .connectionFailed(Self.errorMessage(of: handle))
        }
    }

    /// Closes the session. Later statements throw `.connectionLost`; `reconnect()` opens a new session.
    public func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        statements.removeAll()
    }

    // MARK: libpq plumbing

    private static func connect(_ configuration: PostgresConfiguration) throws(PostgresError) -> OpaquePointer {
        let parameters = configuration.libpqParameters
        // libpq copies the strings during the call; they are freed right after.
        let keywords = parameters.map { UnsafePointer(strdup($0.keyword)) }
        let values = parameters.map { UnsafePointer(strdup($0.value)) }
        defer { (keywords + values).forEach { free(UnsafeMutablePointer(mutating: $0)) } }
        let connection = (keywords + [nil]).withUnsafeBufferPointer { keywords in
            (values + [nil]).withUnsafeBufferPointer { values in
                PQconnectdbParams(keywords.baseAddress, values.baseAddress, 0)
            }
        }
        guard let connection else {
            throw .connectionFailed("libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = errorMessage(of: connection)
            PQfinish(connection)
            throw .connectionFailed(message)
        }
        // libpq prints notices (e.g. "relation already exists, skipping") to stderr by default.
        _ = PQsetNoticeProcessor(connection, Self.discardNotice, nil)
        return connection
    }

    /// Notices are informational and may quote data; they are dropped rather than written to stderr.
    private static let discardNotice: PQnoticeProcessor = { _, _ in }

    /// The cached statement for `key`, or a newly prepared one; nil when the cache is full (run it unprepared).
    func preparedStatement(_ sql: String, key: PostgresPreparedStatementCache.Key, parameters: PostgresParameterList,
                           on handle: OpaquePointer) throws(PostgresError) -> String?
    {
        if let name = statements[key] { return name }
        return try prepareIfRoom(sql, key: key, parameters: parameters, on: handle)
    }

    func forgetPreparedStatement(_ key: PostgresPreparedStatementCache.Key) {
        statements.remove(key)
    }

    private func prepareIfRoom(_ sql: String, key: PostgresPreparedStatementCache.Key,
                               parameters: PostgresParameterList, on handle: OpaquePointer) throws(PostgresError) -> String?
    {
        guard let name = statements.reserveName() else { return nil }
        let prepared = parameters.withCArrays { types, _, _, _ in
            PQprepare(handle, name, sql, parameters.count, types)
        }
        try discardResult(of: prepared, on: handle)
        statements.insert(name, for: key)
        return name
    }

    func openHandle() throws(PostgresError) -> OpaquePointer {
        guard let handle else { throw .connectionLost("the connection was closed") }
        guard PQstatus(handle) == CONNECTION_OK else { throw .connectionLost(Self.errorMessage(of: handle)) }
        return handle
    }

    static func checkStatementText(_ sql: String) throws(PostgresError) {
        guard !sql.utf8.contains(0) else { throw .invalidUsage("SQL text must not contain a NUL character") }
    }

    private func execute(prepared name: String, _ parameters: PostgresParameterList, on handle: OpaquePointer)
        throws(PostgresError) -> PostgresRows
    {
        let result = parameters.withCArrays { _, values, lengths, formats in
            PQexecPrepared(handle, name, parameters.count, values, lengths, formats, PostgresFormat.text.rawValue)
        }
        return try rows(of: result, on: handle)
    }

    private func execute(unprepared sql: String, _ parameters: PostgresParameterList, on handle: OpaquePointer)
        throws(PostgresError) -> PostgresRows
    {
        let result = parameters.withCArrays { types, values, lengths, formats in
            PQexecParams(handle, sql, parameters.count, types, values, lengths, formats, PostgresFormat.text.rawValue)
        }
        return try rows(of: result, on: handle)
    }

    private func discardResult(of result: OpaquePointer?, on handle: OpaquePointer) throws(PostgresError) {
        _ = try rows(of: result, on: handle)
    }

    /// Turns a `PGresult` into rows or an error, and clears it.
    private func rows(of result: OpaquePointer?, on handle: OpaquePointer) throws(PostgresError) -> PostgresRows {
        guard let result else {
            // No result at all: out of memory or the connection failed before a result arrived.
            let message = Self.errorMessage(of: handle)
            throw PQstatus(handle) == CONNECTION_OK ? .unexpectedResponse(message) : .connectionLost(message)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        switch status {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            let storage = status == PGRES_TUPLES_OK ? PostgresResultStorage(copying: result) : .empty
            return PostgresRows(
                storage: storage,
                affectedRows: Int(String(cString: PQcmdTuples(result))) ?? 0,
                commandTag: String(cString: PQcmdStatus(result))
            )
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            abandonCopy(status, on: handle)
            throw .unexpectedResponse("COPY is not supported; insert rows with parameterised statements")
        default:
            throw error(of: result, on: handle)
        }
    }

    func error(of result: OpaquePointer, on handle: OpaquePointer) -> PostgresError {
        guard PQstatus(handle) == CONNECTION_OK else {
            return .connectionLost(Self.errorMessage(of: handle))
        }
        func field(_ code: Unicode.Scalar) -> String? {
            PQresultErrorField(result, Int32(code.value)).map { String(cString: $0) }
        }
        guard let sqlState = field("C") else {
            // Client-side failures (e.g. a parameter count mismatch detected by libpq) carry no SQLSTATE.
            return .unexpectedResponse(Self.clean(String(cString: PQresultErrorMessage(result))))
        }
        // Schema, table, column, data type and constraint names: identifiers the redactor may keep.
        let redactor = PostgresServerMessageRedactor(identifiers: Set(["s", "t", "c", "d", "n"].compactMap(field)))
        return .server(
            sqlState: sqlState,
            message: redactor.redact(field("M") ?? "", sqlState: sqlState),
            detail: field("D").map { redactor.redact($0, sqlState: sqlState) },
            constraint: field("n")
        )
    }

    /// Leaves COPY mode so the connection stays usable after an accidental `COPY … FROM STDIN / TO STDOUT`.
    private func abandonCopy(_ status: ExecStatusType, on handle: OpaquePointer) {
        if status == PGRES_COPY_OUT {
            var buffer: UnsafeMutablePointer<CChar>?
            while PQgetCopyData(handle, &buffer, 0) > 0 {
                PQfreemem(buffer)
            }
        } else {
            _ = PQputCopyEnd(handle, "COPY is not supported by this client")
        }
        while let pending = PQgetResult(handle) {
            PQclear(pending)
        }
    }

    static func errorMessage(of handle: OpaquePointer) -> String {
        clean(PQerrorMessage(handle).map { String(cString: $0) } ?? "")
    }

    /// libpq messages span lines ("…\n\tThis probably means…"); logs want one line.
    private static func clean(_ message: String) -> String {
        let words = message.split(whereSeparator: { $0.isWhitespace })
        return words.isEmpty ? "unknown libpq error" : words.joined(separator: " ")
    }
}

extension PostgresError {
    /// The server refuses to run a cached plan whose result columns changed (table altered since PREPARE).
    var isStalePreparedStatement: Bool {
        guard case .server(let sqlState, let message, _, _) = self else { return false }
        return sqlState == "0A000" && message.contains("cached plan must not change result type")
    }
}
