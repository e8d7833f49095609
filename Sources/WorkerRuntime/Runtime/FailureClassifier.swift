import Postgres

/// Maps any error a handler throws to a ``StageFailure``.
///
/// Handlers throw domain errors already classified where they know better (a bad token is permanent);
/// everything else lands here. Unknown errors are treated as transient: retried a bounded number of
/// times, then dead-lettered as exhausted, so a bug never silently drops or endlessly loops a message.
public enum FailureClassifier {
    public static func classify(_ error: any Error) -> StageFailure {
        switch error {
        case let failure as StageFailure:
            return failure
        case let postgres as PostgresError where postgres.isConnectionProblem:
            return .databaseUnavailable(reason: postgres.description)
        case let postgres as PostgresError where postgres.isSerializationFailureOrDeadlock:
            return .transient(code: "database_conflict", reason: postgres.description)
        case let postgres as PostgresError where refusesValue(postgres):
            return .unattributable(code: "invalid_data", reason: postgres.description)
        case let postgres as PostgresError:
            return .transient(code: "database_error", reason: postgres.description)
        default:
            return .transient(code: "internal_error", reason: String(describing: type(of: error)))
        }
    }

    /// The database refused a value itself — a parameter that cannot be bound (a NUL byte in text) or SQLSTATE class 22
    /// (data exception: bad encoding, `\u0000` in jsonb, out-of-range number). Retrying the same bytes cannot succeed, so
    /// the message is dead-lettered at once (`invalid_data`) instead of cycling through every retry tier. Input
    /// validation should have caught it; this is the safety net. Descriptions are redacted by the Postgres module.
    static func refusesValue(_ error: PostgresError) -> Bool {
        if case .invalidParameter = error { return true }
        return error.sqlState?.hasPrefix("22") == true
    }
}
