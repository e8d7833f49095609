import Foundation
import PaymentStages
@testable import Pipeline
import Postgres
import Testing

extension Integration {
/// One rule, one place: ``MoneyLifecycle/permits(_:)`` decides a lifecycle change, and the database's safety net
/// (migration 12, generated from the same table) accepts and refuses exactly the same changes.
@Suite struct LifecycleRulesTests {
    /// Every lifecycle a row may hold or a statement may try to write: each status with captured amounts 0, part and
    /// all of the authorisation, refunded amounts 0, part, and all, and a different authorised amount.
    static func candidates() -> [MoneyLifecycle] {
        var all: [MoneyLifecycle] = []
        for status in LifecycleStatus.allCases {
            for authorized: Int64 in [1000, 900] {
                for captured: Int64 in [0, 400, 1000] {
                    for refunded: Int64 in [0, 200, 400, 1000] {
                        all.append(MoneyLifecycle(status: status, captureMode: .manual, authorizedAmount: authorized,
                                                  capturedAmount: captured, refundedAmount: refunded))
                    }
                }
            }
        }
        return all
    }

    /// Every (state, change) pair through the real trigger and CHECK: a payment row is put in each consistent state,
    /// every other candidate is written over it (in a savepoint), and the database's verdict is compared with Swift's.
    /// A write of the very same state is no change (the trigger does not fire) and is left out.
    @Test func swiftAndTheDatabaseAgreeOnEveryEdgeAndEveryRefusal() throws {
        try TestServices.resetDatabase()
        let connection = try TestServices.database()
        defer { connection.close() }
        try connection.query("INSERT INTO merchants (id) VALUES ('m1')")
        let candidates = Self.candidates()
        var disagreements: [String] = [], accepted = 0, refused = 0
        var starts: [MoneyLifecycle] = []
        try connection.transaction { transaction in
            // One state: the CHECK accepts a row exactly when Swift calls the state consistent.
            var rows: [(MoneyLifecycle, UUID)] = []
            for (n, state) in candidates.enumerated() {
                let id = UUID()
                try transaction.simpleQuery("SAVEPOINT state")
                do {
                    try transaction.query(
                        """
                        INSERT INTO payments (id, merchant_id, job_id, job_hash, status, stage, first_received_at, amount_minor, currency,
                                              capture_mode, lifecycle, authorized_minor, captured_minor, refunded_minor)
                        VALUES ($1, 'm1', $2, '\\x01', 'authorized', 'done', now(), $3, 'GBP', 'manual', $4, $3, $5, $6)
                        """, [id, "j\(n)", state.authorizedAmount, state.status.rawValue, state.capturedAmount, state.refundedAmount])
                    try transaction.simpleQuery("RELEASE SAVEPOINT state")
                    rows.append((state, id))
                } catch let error as PostgresError {
                    #expect(error.sqlState == "23514", "a refusal is a check violation: \(error)")
                    try transaction.simpleQuery("ROLLBACK TO SAVEPOINT state")
                }
                if rows.last?.1 == id ? !state.isConsistent : state.isConsistent {
                    disagreements.append("\(Self.describe(state)): Swift consistent \(state.isConsistent), SQL \(rows.last?.1 == id)")
                }
            }
            starts = rows.map(\.0)
            for (from, id) in rows {
                for to in candidates where to != from {
                    try transaction.simpleQuery("SAVEPOINT change")
                    var database = true
                    do {
                        try transaction.query(
                            "UPDATE payments SET lifecycle = $2, authorized_minor = $3, captured_minor = $4, refunded_minor = $5 WHERE id = $1",
                            [id, to.status.rawValue, to.authorizedAmount, to.capturedAmount, to.refundedAmount])
                    } catch let error as PostgresError {
                        #expect(error.sqlState == "23514", "a refusal is a check violation: \(error)")
                        database = false
                    }
                    try transaction.simpleQuery("ROLLBACK TO SAVEPOINT change")
                    if database { accepted += 1 } else { refused += 1 }
                    if database != from.permits(to) {
                        disagreements.append("\(Self.describe(from)) → \(Self.describe(to)): Swift \(from.permits(to)), SQL \(database)")
                    }
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements, e.g. \(disagreements.prefix(5))")
        // Both verdicts occur, on every edge of the diagram: the enumeration is not trivially one-sided.
        #expect(accepted > 0 && refused > accepted)
        for from in LifecycleStatus.allCases {
            for to in from.successors {
                #expect(starts.contains { start in start.status == from && candidates.contains { $0.status == to && $0 != start && start.permits($0) } },
                        "the edge \(from) → \(to) is exercised accepted")
            }
        }
    }

    /// The migration's SQL is the generated text of the current table, so the trigger cannot drift from the Swift.
    @Test func theMigrationIsGeneratedFromTheSwiftTable() throws {
        let migration = try #require(PayPipeSchema.migrations.first { $0.version == 12 })
        #expect(migration.sql == PayPipeSchema.lifecycleRulesSQL(LifecycleStatus.allCases))
        #expect(migration.sql.contains("WHEN 'authorized' THEN ARRAY['captured', 'voided']::text[]"))
    }

    static func describe(_ lifecycle: MoneyLifecycle) -> String {
        "\(lifecycle.status.rawValue)(\(lifecycle.authorizedAmount)/\(lifecycle.capturedAmount)/\(lifecycle.refundedAmount))"
    }
}
}
