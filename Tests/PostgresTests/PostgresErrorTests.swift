import Foundation
@testable import Postgres
import Testing

@Suite("Server errors and their classification")
struct PostgresErrorTests {
    @Test func uniqueViolationIsClassifiedAndDoesNotLeakTheValue() throws {
        let connection = try PostgresTestSupport.connect()
        try PostgresTestSupport.withTable("pp_unique", columns: "id serial, pan text UNIQUE", on: connection) { table in
            try connection.query("INSERT INTO \(table) (pan) VALUES ($1)", ["4111111111111111"])
            let error = #expect(throws: PostgresError.self) {
                try connection.query("INSERT INTO \(table) (pan) VALUES ($1)", ["4111111111111111"])
            }
            guard let error, case .server(let sqlState, let message, let detail, let constraint) = error else {
                Issue.record("expected a server error")
                return
            }
            #expect(error.isUniqueViolation)
            #expect(!error.isSerializationFailureOrDeadlock)
            #expect(!error.isConnectionProblem)
            #expect(sqlState == "23505")
            #expect(constraint == "\(table)_pan_key")
            #expect(message == "duplicate key value violates unique constraint \"\(table)_pan_key\"")
            #expect(detail == "Key (pan)=(…) already exists.")
            // The table name is random digits, so it may hold "4111" itself: only the value must not appear.
            #expect(!error.description.replacingOccurrences(of: table, with: "<table>").contains("4111"))
            // The connection is still usable.
            #expect(try connection.query("SELECT count(*) AS n FROM \(table)")[0].decode("n", as: Int.self) == 1)
        }
    }

    @Test func notNullAndCheckViolationsDoNotLeakTheRow() throws {
        let connection = try PostgresTestSupport.connect()
        try PostgresTestSupport.withTable(
            "pp_check", columns: "pan text, amount int8 NOT NULL CHECK (amount > 0)", on: connection
        ) { table in
            for amount in [Int?.none, -5] {
                let error = #expect(throws: PostgresError.self) {
                    try connection.query("INSERT INTO \(table) (pan, amount) VALUES ($1, $2)", ["4111111111111111", amount])
                }
                let description = error.map { "\($0)" } ?? ""
                #expect(description.contains(table))
                #expect(description.contains("Failing row contains (…)"))
                #expect(!description.replacingOccurrences(of: table, with: "<table>").contains("4111"))
            }
        }
    }

    @Test func classifiesSQLStates() {
        func server(_ state: String) -> PostgresError {
            .server(sqlState: state, message: "m", detail: nil, constraint: nil)
        }
        #expect(server("40001").isSerializationFailureOrDeadlock)
        #expect(server("40P01").isSerializationFailureOrDeadlock)
        #expect(!server("40002").isSerializationFailureOrDeadlock)
        #expect(server("23505").isUniqueViolation)
        #expect(!server("23503").isUniqueViolation)
        for state in ["08006", "08003", "57P01", "57P02", "57P03", "53300"] {
            #expect(server(state).isConnectionProblem, "\(state)")
        }
        #expect(!server("23505").isConnectionProblem)
        #expect(!server("57014").isConnectionProblem)  // query_canceled
        #expect(PostgresError.connectionLost("x").isConnectionProblem)
        #expect(PostgresError.connectionFailed("x").isConnectionProblem)
        #expect(!PostgresError.decoding(column: "c", expected: "Int", reason: "r").isConnectionProblem)
    }

    @Test func redactorMasksValuesButKeepsIdentifiers() {
        let redactor = PostgresServerMessageRedactor(identifiers: ["payments", "payments_pan_key", "pan"])
        #expect(redactor.redact("invalid input syntax for type bigint: \"4111 1111\"", sqlState: "22P02")
            == "invalid input syntax for type bigint: \"…\"")
        #expect(redactor.redact("duplicate key value violates unique constraint \"payments_pan_key\"", sqlState: "23505")
            == "duplicate key value violates unique constraint \"payments_pan_key\"")
        #expect(redactor.redact("Key (pan, exp)=(4111, 12/29) already exists.", sqlState: "23505")
            == "Key (pan, exp)=(…) already exists.")
        #expect(redactor.redact("Key (pan)=(41(1)1) is not present in table \"payments\".", sqlState: "23503")
            == "Key (pan)=(…) is not present in table \"payments\".")
        #expect(redactor.redact("Key (c)=(a) conflicts with existing key (c)=(b).", sqlState: "23P01")
            == "Key (c)=(…) conflicts with existing key (c)=(…).")
        #expect(redactor.redact("Failing row contains (1, 4111)). x, null).", sqlState: "23502")
            == "Failing row contains (…).")
        #expect(redactor.redact("value \"99999999999\" is out of range for type integer", sqlState: "22003")
            == "value \"…\" is out of range for type integer")
        // Syntax errors quote SQL text, which never holds values: kept for the developer.
        #expect(redactor.redact("syntax error at or near \"SELEC\"", sqlState: "42601")
            == "syntax error at or near \"SELEC\"")
    }
}
