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
        case let postgres as PostgresError:
            return .transient(code: "database_error", reason: postgres.description)
        default:
            return .transient(code: "internal_error", reason: String(describing: type(of: error)))
        }
    }
}
