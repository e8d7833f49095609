import Foundation
import PaymentStages
import Pipeline
import Postgres
import Testing

extension Integration {
/// The operations stage's record phase on the real PostgreSQL and the simulator: a round's answers are applied
/// set-based (the batch's payments locked and its operations read in one statement each, one write per table), so a
/// round of N operations costs its prepare's per-message statements plus a fixed few, with the rows the per-message
/// path left.
@Suite struct OperationRecordBatchTests {
    /// Statements a connection executed, the per-message payment locks among them, and the operations loaded by row id
    /// one at a time.
    struct Count {
        let statements: Int64
        let perMessageLocks: Int64
        let operationLoads: Int64

        static func read(_ connection: PostgresConnection) throws -> Count {
            let row = try connection.query(
                """
                SELECT coalesce(sum(generic_plans + custom_plans), 0)::bigint AS total,
                       coalesce(sum(generic_plans + custom_plans) FILTER (WHERE statement LIKE '%FROM payments WHERE id = $1 FOR UPDATE'), 0)::bigint AS locks,
                       coalesce(sum(generic_plans + custom_plans) FILTER (WHERE statement LIKE '%LEFT JOIN payments p ON p.id = o.payment_id WHERE o.id = $1'), 0)::bigint AS loads
                FROM pg_prepared_statements
                """)[0]
            return Count(statements: try row.decode("total", as: Int64.self), perMessageLocks: try row.decode("locks", as: Int64.self),
                         operationLoads: try row.decode("loads", as: Int64.self))
        }

        static func - (after: Count, before: Count) -> Count {
            // The counting query itself ran once between the two reads.
            Count(statements: after.statements - before.statements - 1, perMessageLocks: after.perMessageLocks - before.perMessageLocks,
                  operationLoads: after.operationLoads - before.operationLoads)
        }
    }

    /// One round of captures, one per merchant (a wave), on a connection of its own: its results and statements.
    static func round(
        _ captures: [(merchant: String, payment: UUID, operationId: String)], stage: OperationsStage,
        harness: OperationsStageTests.Harness
    ) throws -> (results: [Result<StageOutcome, StageFailure>], count: Count) {
        let database = try harness.authorize.database()
        defer { database.close() }
        let batch = try captures.map { try stage.decode(harness.delivery(.capture, $0.operationId, payment: $0.payment, amount: 600, merchantId: $0.merchant)) }
        let before = try Count.read(database)
        let results = stage.process(batch, database: database)
        return (results, try Count.read(database) - before)
    }

    /// A round of four captures costs the statements of a round of one plus the four prepares: the record phase locks
    /// the batch's payments once and reads its operations once, where it locked and loaded per answer; every capture
    /// is sent once, recorded, moves its payment to `captured` and is reported.
    @Test func aRoundOfOperationsIsRecordedInAFewStatements() throws {
        let harness = try OperationsStageTests.Harness(settleDelay: 60, otherMerchants: 4)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let merchants = [OperationsStageTests.merchantId] + (1...4).map { "\(OperationsStageTests.merchantId)-\($0)" }
        let payments = try merchants.map { try harness.authorizedPayment(amount: 1000, mode: .manual, merchantId: $0) }
        let one = try Self.round([(merchants[0], payments[0], "round-0")], stage: stage, harness: harness)
        let four = try Self.round((1...4).map { (merchants[$0], payments[$0], "round-\($0)") }, stage: stage, harness: harness)
        print("operations statements: round of 1: \(one.count), round of 4: \(four.count)")
        for result in one.results + four.results {
            guard case .success(.publish) = result else { throw TestFailure("a capture not reported: \(result)") }
        }
        for payment in payments {
            #expect(try harness.lifecycle(payment).map { ($0.status, $0.capturedAmount) } ?? (.voided, 0) == (.captured, 600))
        }
        for (index, merchant) in merchants.enumerated() {
            #expect(try harness.operation("round-\(index)", merchantId: merchant)?.state == .succeeded)
        }
        #expect(harness.simulator.ledger.operations.count == 5, "one TRANSACTIONUPDATE per capture")
        // The prepare still locks and loads per message (one each); the record phase adds no per-answer lock or load.
        #expect(four.count.perMessageLocks == 4)
        #expect(four.count.operationLoads == 4)
        // Per extra operation of a round: at most its prepare's statements (a round of one less its record phase); the
        // record phase's are per round. (Per answer, as recording was: 7 more per extra operation, and this fails.)
        #expect(four.count.statements - one.count.statements <= 3 * (one.count.statements - Self.recordStatements))
    }

    /// The record phase's statements of a round (set-based, whatever its size): the payments locked and read, the
    /// operations read, the attempts, lifecycles and operations written, the operations read back.
    static let recordStatements: Int64 = 6
}
}
