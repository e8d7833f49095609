import Postgres
import Testing
@testable import WorkerRuntime

@Suite struct FailureClassifierTests {
    @Test(arguments: [
        (PostgresError.invalidParameter(position: 5, reason: "a text value must not contain a NUL byte"), "invalid_data"),
        (PostgresError.server(sqlState: "22P05", message: "unsupported Unicode escape sequence", detail: nil, constraint: nil), "invalid_data"),
        (PostgresError.server(sqlState: "22021", message: "invalid byte sequence", detail: nil, constraint: nil), "invalid_data"),
    ])
    func valuesTheDatabaseRefusesAreDeadLetteredNotRetried(error: PostgresError, code: String) {
        #expect(FailureClassifier.classify(error) == .unattributable(code: code, reason: error.description))
    }

    @Test func otherDatabaseErrorsKeepTheirClass() {
        let conflict = PostgresError.server(sqlState: "40001", message: "could not serialize", detail: nil, constraint: nil)
        #expect(FailureClassifier.classify(conflict).code == "database_conflict")
        let unique = PostgresError.server(sqlState: "23505", message: "duplicate key", detail: nil, constraint: "x")
        #expect(FailureClassifier.classify(unique) == .transient(code: "database_error", reason: unique.description))
        #expect(FailureClassifier.classify(PostgresError.connectionLost("gone")) == .databaseUnavailable(reason: PostgresError.connectionLost("gone").description))
    }

    /// A COMMIT without an answer (a failover under it) holds the batch like an outage: the runtime reconnects and runs
    /// the messages again, and the handlers' first step re-reads what the lost transaction may have written.
    @Test func aCommitOfUnknownOutcomeHoldsTheBatchLikeADatabaseOutage() {
        let unknown = PostgresError.commitOutcomeUnknown(PostgresError.connectionLost("server closed the connection").description)
        #expect(unknown.isConnectionProblem)
        #expect(FailureClassifier.classify(unknown) == .databaseUnavailable(reason: unknown.description))
    }
}
