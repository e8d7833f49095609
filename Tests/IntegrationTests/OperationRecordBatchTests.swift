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
        // The prepare locks and reads the round's payments at once (no per-message lock), records its new operations
        // with their attempts in one statement and reads them back in one (no load by id); the record phase adds no
        // per-answer lock or load.
        #expect(four.count.perMessageLocks == 0)
        #expect(four.count.operationLoads == 0)
        // Per extra operation of a round: at most its merchant's entry (the directory's cache is off here); every read
        // and write of the prepare and the record phase is per round. (Planned per message, the prepare cost 8
        // statements per extra operation, and this fails.)
        #expect(four.count.statements - one.count.statements <= 3 * Self.preparePerOperation)
    }

    /// A prepare's statements per operation of a round beyond the round's own: its merchant's entry read.
    static let preparePerOperation: Int64 = 1

    /// What a message came to, without its ids: the outcome or failure code (what the runtime does with it).
    static func outcome(_ result: Result<StageOutcome, StageFailure>) -> String {
        switch result {
        case .success(.publish(let messages)): "publish \(messages.count)"
        case .success(.settled(let note, _)): "settled \(note)"
        case .success(.completed): "completed"
        case .success(.handOff): "hand-off"
        case .success: "other"
        case .failure(let failure): "\(failure.code)"
        }
    }

    /// A scenario run twice with its own payments and ids: tagged `b`, its deliveries processed as one batch; tagged
    /// `s`, one at a time. Each run's scenario, outcomes and requests sent to the simulator.
    static func batchAndOneByOne(
        _ scenario: (String) throws -> (deliveries: [InboundMessage], payments: [UUID]), stage: OperationsStage,
        harness: OperationsStageTests.Harness, database: PostgresConnection
    ) throws -> (batch: Run, oneByOne: Run) {
        let batched = try scenario("b")
        let sentBefore = harness.simulator.ledger.operations.count
        let inBatch = stage.process(try batched.deliveries.map { try stage.decode($0) }, database: database).map(Self.outcome)
        let sentInBatch = harness.simulator.ledger.operations.count - sentBefore
        let single = try scenario("s")
        let oneByOne = try single.deliveries.map { try Self.outcome(harness.run(stage, $0)) }
        let sentOneByOne = harness.simulator.ledger.operations.count - sentBefore - sentInBatch
        return ((batched, inBatch, sentInBatch), (single, oneByOne, sentOneByOne))
    }

    typealias Run = (scenario: (deliveries: [InboundMessage], payments: [UUID]), outcomes: [String], sent: Int)

    /// A mixed batch, planned together (one prepare per wave), comes to what the same messages came to one at a time:
    /// captures, a void and a refused over-capture of five merchants, a duplicate and a conflicting reuse of an
    /// operationId, an operation on a payment still in decrypt (it waits, nothing recorded), two invalid operations in
    /// one wave (recorded refused together, dead-lettered), and a refund of the captured payment (its settlement
    /// learnt first). Each request sent
    /// once, the duplicate never sent again.
    @Test func aMixedBatchComesToWhatItsMessagesCameToOneByOne() throws {
        let harness = try OperationsStageTests.Harness(settleDelay: 60, otherMerchants: 4)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let merchants = [OperationsStageTests.merchantId] + (1...4).map { "\(OperationsStageTests.merchantId)-\($0)" }
        // A capture whose amount is not in minor units: invalid, recorded failed without a payment and dead-lettered.
        func invalid(_ operationId: String, payment: UUID, merchantId: String) -> InboundMessage {
            let json = #"{"operationId":"\#(operationId)","merchantId":"\#(merchantId)","paymentId":"\#(payment.paymentIDText)","amount":8.0}"#
            return InboundMessage(job: Array(json.utf8), routingKey: OperationRequest.Kind.capture.routingKey)
        }
        // The scenario with its own payments and ids (`tag`): its deliveries, and the payments to check.
        func scenario(_ tag: String) throws -> (deliveries: [InboundMessage], payments: [UUID]) {
            let payments = try (0..<4).map { try harness.authorizedPayment(amount: 1000, mode: .manual, merchantId: merchants[$0]) }
            let received = try harness.authorize.insertPayment(merchantId: merchants[4], amount: 700, currency: "GBP",
                                                               orderReference: "MIX-\(tag)", data: nil).paymentId
            let deliveries = [
                harness.delivery(.capture, "cap-\(tag)", payment: payments[0], amount: 600, merchantId: merchants[0]),
                harness.delivery(.void, "void-\(tag)", payment: payments[1], merchantId: merchants[1]),
                harness.delivery(.capture, "over-\(tag)", payment: payments[2], amount: 5000, merchantId: merchants[2]),
                harness.delivery(.capture, "dup-\(tag)", payment: payments[3], amount: 400, merchantId: merchants[3]),
                harness.delivery(.capture, "early-\(tag)", payment: received, amount: 700, merchantId: merchants[4]),
                harness.delivery(.capture, "dup-\(tag)", payment: payments[3], amount: 400, merchantId: merchants[3]),
                harness.delivery(.capture, "dup-\(tag)", payment: payments[3], amount: 300, merchantId: merchants[3]),
                invalid("inv0-\(tag)", payment: payments[0], merchantId: merchants[0]),
                invalid("inv2-\(tag)", payment: payments[2], merchantId: merchants[2]),
                // A refund of the payment the first capture captured (a later wave): its settlement is learnt first.
                harness.delivery(.refund, "ref-\(tag)", payment: payments[0], amount: 100, merchantId: merchants[0]),
            ]
            return (deliveries, payments + [received])
        }
        let database = try harness.authorize.database()
        defer { database.close() }
        let ((batched, inBatch, sentInBatch), (single, oneByOne, sentOneByOne)) = try Self.batchAndOneByOne(scenario, stage: stage, harness: harness,
                                                                                                       database: database)
        #expect(inBatch == oneByOne)
        #expect(inBatch == ["publish 1", "publish 1", "publish 1", "publish 1", "awaiting_authorization", "publish 1", "operation_conflict",
                            "invalid_job", "invalid_job", "publish 1"])
        #expect(sentInBatch == 4 && sentOneByOne == 4, "the capture, the void, the first of the duplicate and the refund, once each")
        // The refund's settlement was asked first, and recorded as one by one.
        let settlement = { (payment: UUID) in
            try database.query("SELECT settle_status, settle_checked_at IS NOT NULL AS checked FROM payments WHERE id = $1", [payment]).first.map {
                "\(try $0.decode("settle_status", as: String?.self) ?? "-") \(try $0.decode("checked", as: Bool.self))"
            }
        }
        #expect(try settlement(batched.payments[0])?.hasSuffix("true") == true)
        #expect(try settlement(batched.payments[0]) == settlement(single.payments[0]))
        let shape = { (payment: UUID) in try harness.lifecycle(payment).map { "\($0.status) \($0.capturedAmount) \($0.refundedAmount)" } }
        for (batch, one) in zip(batched.payments, single.payments) {
            #expect(try shape(batch) == shape(one))
        }
        for (id, merchant) in [("cap", 0), ("void", 1), ("over", 2), ("dup", 3), ("early", 4), ("ref", 0)] {
            #expect(try harness.operation("\(id)-b", merchantId: merchants[merchant])?.state == harness.operation("\(id)-s", merchantId: merchants[merchant])?.state)
        }
        #expect(try harness.operation("early-b", merchantId: merchants[4]) == nil, "an operation on a payment still in decrypt records nothing")
        #expect(try harness.operation("over-b", merchantId: merchants[2])?.state == .failed)
        // The two invalid operations (one wave) recorded refused, without a payment, as one by one.
        for (id, merchant) in [("inv0", 0), ("inv2", 2)] {
            let shape = { (tag: String) in
                try harness.operation("\(id)-\(tag)", merchantId: merchants[merchant]).map { "\($0.state.rawValue) \($0.errorCode ?? "-") \($0.paymentId == nil)" }
            }
            #expect(try shape("b") == "failed invalid_job true")
            #expect(try shape("b") == shape("s"))
        }
    }

    /// A merchant whose configuration can no longer be opened fails its own operations, with the classified failure,
    /// and nothing else: the other merchant's capture in the same round is sent once, recorded and reported, and the
    /// unreadable merchant's records nothing and sends nothing.
    @Test func aMerchantThatCannotBeLoadedFailsItsOwnOperationsAlone() throws {
        let harness = try OperationsStageTests.Harness(settleDelay: 60, otherMerchants: 1)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let merchants = [OperationsStageTests.merchantId, "\(OperationsStageTests.merchantId)-1"]
        let payments = try merchants.map { try harness.authorizedPayment(amount: 1000, mode: .manual, merchantId: $0) }
        let database = try harness.authorize.database()
        defer { database.close() }
        // Sealed for another merchant id: the vault refuses to open it (its AAD is the merchant's id).
        try database.query(
            """
            UPDATE merchants SET (secrets_ciphertext, secrets_nonce, secrets_key_id) =
                (SELECT secrets_ciphertext, secrets_nonce, secrets_key_id FROM merchants WHERE id = $1), updated_at = clock_timestamp()
            WHERE id = $2
            """, [merchants[0], merchants[1]])
        let sentBefore = harness.simulator.ledger.operations.count
        let batch = try [
            stage.decode(harness.delivery(.capture, "ok-cap", payment: payments[0], amount: 600, merchantId: merchants[0])),
            stage.decode(harness.delivery(.capture, "unreadable-cap", payment: payments[1], amount: 600, merchantId: merchants[1])),
        ]
        let results = stage.process(batch, database: database)
        #expect(Self.outcome(results[0]) == "publish 1")
        guard case .failure(let failure) = results[1] else { throw TestFailure("the unreadable merchant's capture went on: \(results[1])") }
        #expect(!["unknown_merchant", "database_error"].contains(failure.code), "classified as the merchant's own failure: \(failure.code)")
        #expect(harness.simulator.ledger.operations.count - sentBefore == 1, "only the readable merchant's capture is sent")
        #expect(try harness.operation("ok-cap", merchantId: merchants[0])?.state == .succeeded)
        #expect(try harness.operation("unreadable-cap", merchantId: merchants[1]) == nil, "nothing recorded for the unreadable merchant")
        #expect(try harness.lifecycle(payments[1])?.status == .authorized)
    }

    /// The reconciler's automatic voids, planned together in one round, come to what they came to one at a time: an
    /// authorisation past its capture deadline (expiry) and a late AUTH up for review, each voided once and reported;
    /// an authorisation not yet due has nothing to do; a redelivered hand-off (a later wave) reports the void again and
    /// sends nothing.
    @Test func automaticVoidsInOneRoundComeToWhatTheyCameToOneByOne() throws {
        let harness = try OperationsStageTests.Harness(settleDelay: 3600, otherMerchants: 2)
        defer { harness.tearDown() }
        let stage = harness.stage()
        let merchants = [OperationsStageTests.merchantId] + (1...2).map { "\(OperationsStageTests.merchantId)-\($0)" }
        let database = try harness.authorize.database()
        defer { database.close() }
        // The scenario's payments (expired, late, not due) and its deliveries: the reconciler's hand-offs of the first
        // two, the first again, and a hand-off of the third.
        func scenario(_ tag: String) throws -> (deliveries: [InboundMessage], payments: [UUID]) {
            let expired = try harness.authorizedPayment(amount: 400, mode: .manual, merchantId: merchants[0])
            try database.query("UPDATE payments SET capture_deadline = clock_timestamp() WHERE id = $1", [expired])
            let late = try harness.lateAuthorization(merchantId: merchants[1], orderReference: "LATE-\(tag)", on: database)
            let notDue = try harness.authorizedPayment(amount: 300, mode: .manual, merchantId: merchants[2])
            try database.query("UPDATE payments SET capture_deadline = clock_timestamp() + interval '1 day' WHERE id = $1", [notDue])
            let handed = try OperationsWorker(stage).reconcile(on: database).map(\.message)
            #expect(Set(handed.map(\.paymentId)) == [expired, late.paymentId], "the reconciler hands over the expired and the late payment")
            let message = { (payment: UUID) in try #require(handed.first { $0.paymentId == payment }) }
            let notDueMessage = StageMessage(paymentId: notDue, merchantId: merchants[2], jobId: try #require(try PaymentStore().load(notDue, on: database)).jobId)
            let deliveries = try [message(expired), late, message(expired), notDueMessage].map { InboundMessage(body: $0.encoded(), to: .operations) }
            return (deliveries, [expired, late.paymentId, notDue])
        }
        let ((batched, inBatch, sentInBatch), (single, oneByOne, sentOneByOne)) = try Self.batchAndOneByOne(scenario, stage: stage, harness: harness,
                                                                                                       database: database)
        #expect(inBatch == oneByOne)
        #expect(inBatch == ["publish 1", "publish 2", "publish 1", "settled nothing_to_do"])
        #expect(sentInBatch == 2 && sentOneByOne == 2, "one void per due payment, never a second")
        let status = { (payment: UUID) in try PaymentStore().load(payment, on: database).map { "\($0.status) \($0.errorCode ?? "-")" } }
        let shape = { (payment: UUID) in try harness.lifecycle(payment).map { "\($0.status) \($0.capturedAmount) \($0.refundedAmount)" } }
        for (batch, one) in zip(batched.payments, single.payments) {
            #expect(try status(batch) == status(one))
            #expect(try shape(batch) == shape(one))
        }
        let voids = { (payments: [UUID]) in
            try [harness.operation(OperationSteps.expiryOperationId(payments[0]), merchantId: merchants[0]),
                 harness.operation(OperationSteps.lateAuthorizationOperationId(payments[1]), merchantId: merchants[1])]
                .map { $0.map { "\($0.state.rawValue) \($0.requestedBy.rawValue) \($0.effect?.amount ?? 0)" } }
        }
        #expect(try voids(batched.payments) == ["succeeded expiry 400", "succeeded late_authorization 900"])
        #expect(try voids(batched.payments) == voids(single.payments))
        #expect(try harness.operation(OperationSteps.expiryOperationId(batched.payments[2]), merchantId: merchants[2]) == nil)
    }

    /// The record phase's statements of a round (set-based, whatever its size): the payments locked and read, the
    /// operations read, the attempts, lifecycles and operations written, the operations read back.
    static let recordStatements: Int64 = 6
}
}
