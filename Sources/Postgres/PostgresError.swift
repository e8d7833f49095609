/// Everything that can go wrong talking to PostgreSQL.
///
/// Descriptions are safe to log: they carry the server's SQLSTATE and message (with quoted values and key values
/// masked, see `PostgresServerMessageRedactor`) and never the values bound as statement parameters, which may be
/// card data.
public enum PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The connection URL is malformed; the text names the offending part but never echoes the password.
    case invalidURL(String)
    /// Establishing (or re-establishing) the connection failed: libpq's message.
    case connectionFailed(String)
    /// The connection is closed, was closed by the client, or broke while in use.
    case connectionLost(String)
    /// The server rejected a statement. Fields come from `PQresultErrorField`; `message` and `detail` are redacted.
    case server(sqlState: String, message: String, detail: String?, constraint: String?)
    /// A result value could not be decoded as the requested Swift type.
    case decoding(column: String, expected: String, reason: String)
    /// A bound parameter cannot be sent (for example a string containing a NUL byte). `position` is 1-based, as `$n`.
    case invalidParameter(position: Int, reason: String)
    /// `transaction` kept hitting serialization failures or deadlocks; `last` describes the final failure.
    case transactionRetriesExhausted(attempts: Int, last: String)
    /// A statement failed inside a transaction or savepoint but the body returned normally (it swallowed the
    /// error); committing would silently roll back, so the work is rolled back and reported instead.
    case transactionAborted(String)
    /// `COMMIT` was sent but no answer came back (the connection broke, the server shut down or a failover
    /// terminated the session): the transaction may or may not have committed. The only safe reaction is to
    /// reconnect and re-read the state it wrote, never to assume either outcome. A connection problem.
    case commitOutcomeUnknown(String)
    /// The API was used out of order, e.g. `savepoint` outside a transaction or a nested `transaction`.
    case invalidUsage(String)
    /// libpq returned something this client does not handle (e.g. `COPY` data).
    case unexpectedResponse(String)

    /// The SQLSTATE of a server error, nil otherwise.
    public var sqlState: String? {
        if case .server(let sqlState, _, _, _) = self { sqlState } else { nil }
    }

    /// 40001 `serialization_failure` or 40P01 `deadlock_detected`: re-running the transaction may succeed.
    public var isSerializationFailureOrDeadlock: Bool {
        sqlState == "40001" || sqlState == "40P01"
    }

    /// 23505 `unique_violation`: typically a duplicate job or idempotency key.
    public var isUniqueViolation: Bool {
        sqlState == "23505"
    }

    /// The connection is unusable or was never established: reconnecting (and retrying) is the remedy.
    ///
    /// Covers lost/failed connections, a `COMMIT` of unknown outcome, SQLSTATE class 08 (connection exception), 57P01 `admin_shutdown`,
    /// 57P02 `crash_shutdown`, 57P03 `cannot_connect_now` and 53300 `too_many_connections`.
    public var isConnectionProblem: Bool {
        switch self {
        case .connectionFailed, .connectionLost, .commitOutcomeUnknown:
            return true
        case .server(let sqlState, _, _, _):
            return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03", "53300"].contains(sqlState)
        default:
            return false
        }
    }

    public var description: String {
        switch self {
        case .invalidURL(let reason):
            return "invalid PostgreSQL URL: \(reason)"
        case .connectionFailed(let message):
            return "could not connect to PostgreSQL: \(message)"
        case .connectionLost(let message):
            return "PostgreSQL connection lost: \(message)"
        case .server(let sqlState, let message, let detail, let constraint):
            var text = "PostgreSQL error \(sqlState): \(message)"
            if let detail { text += " (\(detail))" }
            if let constraint { text += " [constraint \(constraint)]" }
            return text
        case .decoding(let column, let expected, let reason):
            return "cannot decode column \"\(column)\" as \(expected): \(reason)"
        case .invalidParameter(let position, let reason):
            return "cannot bind parameter $\(position): \(reason)"
        case .transactionRetriesExhausted(let attempts, let last):
            return "transaction gave up after \(attempts) attempts (serialization failure or deadlock); last error: \(last)"
        case .transactionAborted(let reason):
            return "transaction aborted: \(reason)"
        case .commitOutcomeUnknown(let cause):
            return "COMMIT outcome unknown (re-read before acting): \(cause)"
        case .invalidUsage(let reason):
            return "invalid use of PostgresConnection: \(reason)"
        case .unexpectedResponse(let reason):
            return "unexpected response from PostgreSQL: \(reason)"
        }
    }
}
