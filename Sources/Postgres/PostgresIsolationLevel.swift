/// The isolation level a transaction starts with (`BEGIN ISOLATION LEVEL …`).
///
/// `.serializable` and `.repeatableRead` can fail with SQLSTATE 40001 when transactions conflict;
/// `PostgresConnection.transaction` retries those failures by re-running the whole body.
public enum PostgresIsolationLevel: String, Sendable {
    case readCommitted = "READ COMMITTED"
    case repeatableRead = "REPEATABLE READ"
    case serializable = "SERIALIZABLE"
}
