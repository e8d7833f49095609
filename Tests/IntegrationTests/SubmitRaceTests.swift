import Foundation
import HTTP
import JWT
import PaymentStages
import Pipeline
import Postgres
import Synchronization
import Testing

/// Competing consumers of one payment, black-box: `SubmitStage.process` on the real PostgreSQL against the gateway
/// simulator, which holds answers until the test releases them so that calls overlap exactly where a race would
/// charge twice, adopt another payment's record or report an outcome the gateway never produced.
extension Integration {
@Suite struct SubmitRaceTests {
    /// Runs `body` on a thread of its own; `join` waits for its result.
    final class Background: Sendable {
        private let result = Mutex<Result<StageOutcome, StageFailure>?>(nil)
        private let group = DispatchGroup()

        init(_ body: @escaping @Sendable () throws -> Result<StageOutcome, StageFailure>) {
            group.enter()
            Thread.detachNewThread { [self] in
                let value = (try? body()) ?? .failure(.transient(code: "test_error", reason: "the call threw"))
                result.withLock { $0 = value }
                group.leave()
            }
        }

        var isDone: Bool { result.withLock { $0 != nil } }

        func join(timeout: Double = 30) throws -> Result<StageOutcome, StageFailure> {
            guard group.wait(timeout: .now() + timeout) == .success, let value = result.withLock({ $0 }) else {
                throw TestFailure("background call did not finish within \(timeout)s")
            }
            return value
        }
    }

    static func transientCode(_ result: Result<StageOutcome, StageFailure>) -> String? {
        SubmitStageTests.transientCode(result)
    }

    /// Defect 1: two consumers of one payment (a redelivery and a re-drive) both query and both hear "not found".
    /// The first re-arms and sends AUTH 2; the second must not take the payment, now `submitting` again because of
    /// AUTH 2, for its own and send AUTH 3.
    @Test func twoConsumersThatBothHeardNotFoundSendOneAuth() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let (message, order) = try SubmitStageTests.crashedAfterSending(harness, amount: 1000, sent: false)
        try harness.ageAttempts(message.paymentId, by: 60)
        let queries = harness.simulator.holds.hold(.init(requestType: "TRANSACTIONQUERY", orderReferencePrefix: order))
        let auths = harness.simulator.holds.hold(.init(requestType: "AUTH", orderReferencePrefix: order))
        defer {
            harness.simulator.holds.release(queries)
            harness.simulator.holds.release(auths)
        }
        // A long client timeout: the held answers must not time out on the client's side.
        let first = Background { try harness.process(harness.makeStage(timeout: 10), message) }
        let second = Background { try harness.process(harness.makeStage(timeout: 10), message) }
        try TestServices.eventually(timeout: 10, "both consumers query") { harness.simulator.holds.waiting(queries) == 2 }
        harness.simulator.holds.releaseOne(queries)
        try TestServices.eventually(timeout: 10, "the first consumer re-arms and sends AUTH 2") { harness.simulator.holds.arrivals(auths) == 1 }
        harness.simulator.holds.releaseOne(queries)
        // The second consumer records its stale "not found" while AUTH 2 is in flight; give it the time to send AUTH 3.
        let deadline = Date().addingTimeInterval(2)
        while Date() < deadline, harness.simulator.holds.arrivals(auths) < 2, !(first.isDone || second.isDone) {
            Thread.sleep(forTimeInterval: 0.02)
        }
        harness.simulator.holds.release(auths)
        _ = try first.join()
        _ = try second.join()
        #expect(harness.ledgerAuths(prefix: order).count == 1, "AUTHs processed for one payment")
        #expect(try harness.payment(message.paymentId).status == .authorized)
    }

    /// Defect (chaos, CI): the batch read locked the payments and read their attempts in one statement. A consumer that
    /// waited for a payment's row lock got the payment as the lock holder left it (PostgreSQL re-reads a locked row
    /// that changed) but its attempts as they were when the statement started: a payment the holder had just moved to
    /// `submitting` with a `sending` attempt looked attempt-less, was re-armed to `prepared` beside the AUTH in flight,
    /// and stayed there for good (`attempt_open` on every plan, never expired), its AUTH's answer kept as evidence.
    @Test func aConsumerThatWaitedForTheRowLockSeesTheHoldersAttempt() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let (message, order) = try harness.preparedPayment(amount: 1000)
        // The holder: another consumer's planning transaction, between its lock and its commit.
        let holder = try harness.authorize.database()
        defer { holder.close() }
        try holder.simpleQuery("BEGIN")
        try holder.query("SELECT id FROM payments WHERE id = $1 FOR UPDATE", [message.paymentId])
        let moved = try PaymentStore().beginSubmitting(
            [PaymentStore.SubmitSend(paymentId: message.paymentId, orderReference: order, requestType: "AUTH", siteReference: "test_site",
                                     settleSeconds: 60)],
            sendWindow: 1, actor: "test", on: holder)
        let attemptId = try #require(moved[message.paymentId])
        // The waiter: this consumer's planning transaction, blocked on the row lock.
        let stage = harness.makeStage()
        let waiter = Background {
            let database = try harness.authorize.database()
            defer { database.close() }
            let prepared = try database.transaction { try stage.prepare([message], window: nil, transaction: $0) }
            guard case .decided(.failure(let failure)) = prepared[0] else { return .failure(.transient(code: "test_unexpected", reason: "\(prepared[0])")) }
            return .failure(failure)
        }
        let watcher = try harness.authorize.database()
        defer { watcher.close() }
        try TestServices.eventually(timeout: 10, "the waiter blocks on the row lock") {
            try watcher.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").count == 1
        }
        try holder.simpleQuery("COMMIT")
        let decided = try waiter.join()
        #expect(Self.transientCode(decided) == "awaiting_reconciliation", "the waiter decided \(decided)")
        #expect(try harness.payment(message.paymentId).status == .submitting, "the AUTH in flight keeps its payment")
        let latest = try harness.attempts(message.paymentId).filter { $0.requestType != GatewayAttemptStore.queryRequestType }.last
        #expect(latest?.id == attemptId && latest?.state == .sending)
    }

    /// Defect 1: the answer to an old attempt arrives after a newer AUTH was planned; it must not settle the payment.
    @Test func aLateTransientAnswerOfAnOldAttemptDoesNotRearmTheCurrentOne() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        // Attempt 1 goes out and its refusal (79001 locked: nothing recorded) is held back.
        let (message, order) = try harness.preparedPayment(amount: 1093)
        let auths = harness.simulator.holds.hold(.init(requestType: "AUTH", orderReferencePrefix: order))
        defer { harness.simulator.holds.release(auths) }
        let first = Background { try harness.process(harness.makeStage(timeout: 20), message) }
        try TestServices.eventually(timeout: 10, "AUTH 1 is at the gateway") { harness.simulator.holds.waiting(auths) == 1 }
        // Meanwhile the operator's re-drive finds attempt 1 old enough, queries (no record), and sends AUTH 2.
        try harness.ageAttempts(message.paymentId, by: 600)
        let second = Background { try harness.process(harness.makeStage(), message) }
        try TestServices.eventually(timeout: 10, "AUTH 2 is at the gateway") { harness.simulator.holds.arrivals(auths) == 2 }
        let attemptsBefore = try harness.attempts(message.paymentId).filter { $0.requestType != GatewayAttemptStore.queryRequestType }
        // AUTH 1's late refusal must leave the payment to AUTH 2.
        harness.simulator.holds.releaseOne(auths)
        try TestServices.eventually(timeout: 10, "AUTH 1's answer recorded") { first.isDone }
        #expect(try harness.payment(message.paymentId).status == .submitting, "the payment waits for AUTH 2")
        harness.simulator.holds.release(auths)
        _ = try second.join()
        #expect(attemptsBefore.count == 2)
    }

    /// Defect 2: an AUTH that waited in the worker's call queue must not leave after a duplicate consumer could
    /// already have reconciled its attempt (queried, heard "not found" and sent again).
    @Test func anAuthQueuedBehindSlowCallsCannotLeaveAfterReconciliationStarted() throws {
        let harness = try SubmitHarness(slowResponseSeconds: 3)
        defer { harness.tearDown() }
        // One call thread; four calls ahead of P each take the whole 1 s timeout.
        let slow = try (0..<4).map { _ in try harness.preparedPayment(amount: 1098).message }
        let (payment, order) = try harness.preparedPayment(amount: 1000)
        let worker = harness.makeStage(callConcurrency: 1)
        let started = Date()
        let batch = Background {
            let database = try harness.authorize.database()
            defer { database.close() }
            return worker.process(slow + [payment], database: database).last!
        }
        // A duplicate hand-off of P is handled by another worker once the attempt looks settled on the old rule
        // (started + timeout + grace), while P's AUTH still waits for a call thread.
        Thread.sleep(until: started.addingTimeInterval(1.6))
        let duplicate = try harness.process(harness.makeStage(), payment)
        _ = try batch.join()
        #expect(harness.ledgerAuths(prefix: order).count <= 1, "AUTHs processed for one payment (duplicate: \(duplicate))")
    }

    /// Defect 3: a retried order (same merchant `orderReference`, new job) whose AUTH never reached the gateway must
    /// not adopt the first try's record.
    @Test func reconciliationNeverAdoptsAnotherPaymentsRecord() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let stage = harness.makeStage()
        let shared = "ORD-\(UUID().uuidString.prefix(8))"
        let (firstTry, _) = try harness.preparedPayment(amount: 1000, orderReference: shared)
        _ = try harness.process(stage, firstTry)
        #expect(try harness.payment(firstTry.paymentId).status == .authorized)
        let firstReference = try harness.authColumns(firstTry.paymentId)["transaction_reference"]

        // The retry's AUTH is lost before the gateway processes it: the client cannot tell, so it must query.
        let (retry, _) = try harness.preparedPayment(amount: 1000, orderReference: shared)
        let lose = harness.simulator.holds.hold(.init(requestType: "AUTH", orderReferencePrefix: shared, loseUnprocessed: true))
        #expect(Self.transientCode(try harness.process(stage, retry)) == "gateway_outcome_uncertain")
        harness.simulator.holds.release(lose)
        try harness.ageAttempts(retry.paymentId, by: 60)
        for _ in 0..<3 where try harness.payment(retry.paymentId).status == .submitting {
            _ = try harness.process(stage, retry)
        }
        let database = try harness.authorize.database()
        defer { database.close() }
        let adopted = try harness.authColumns(retry.paymentId)["transaction_reference"]
        #expect(adopted != firstReference, "the retry adopted the first try's transaction \(firstReference ?? "-")")
        #expect(harness.ledgerAuths(prefix: shared).count == 2, "the retry was charged on its own")
        #expect(try PaymentStore().load(retry.paymentId, on: database)?.orderReference == shared, "the merchant's reference is unchanged")
    }

    /// Defect 4: errorcode 0 is not "authorised" whatever `settlestatus` says.
    @Test("settlestatus decides an errorcode 0 AUTH", arguments: [(Int64(1090), PaymentStatus.declined, "gateway_cancelled"), (1089, .needsReview, "gateway_suspended")])
    func settleStatusIsMapped(amount: Int64, status: PaymentStatus, code: String) throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let (message, _) = try harness.preparedPayment(amount: amount)
        _ = try harness.process(harness.makeStage(), message)
        let payment = try harness.payment(message.paymentId)
        #expect(payment.status == status)
        #expect(payment.errorCode == code)
        #expect(try harness.authColumns(message.paymentId)["settle_status"] == (amount == 1090 ? "3" : "2"))
    }

    /// Defect 4: a proxy's 503 can come after the request was forwarded: query before any resend.
    @Test func a503AfterForwardingIsReconciledNotResent() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let stage = harness.makeStage()
        let (message, order) = try harness.preparedPayment(amount: 1088)
        for _ in 0..<4 where try !harness.payment(message.paymentId).status.isTerminal {
            _ = try harness.process(stage, message)
            try harness.ageAttempts(message.paymentId, by: 60)
        }
        #expect(harness.ledgerAuths(prefix: order).count == 1, "AUTHs processed")
        #expect(try harness.payment(message.paymentId).status == .authorized)
    }

    /// Defect 4: a busy merchant (no call slot in this worker) never asked the gateway, so it spends no query budget.
    @Test func merchantBusyConsumesNoQueryBudget() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let stage = harness.makeStage(maxQueries: 2, merchantConcurrency: 1)
        let (message, _) = try SubmitStageTests.crashedAfterSending(harness, amount: 1000, sent: false)
        try harness.ageAttempts(message.paymentId, by: 60)
        // The merchant's one call slot, held as a call in flight holds it.
        guard case .acquired(let held) = stage.gate.acquire(EndpointGate.Call(endpoint: "elsewhere", owner: SubmitHarness.merchantId), timeout: 0) else {
            Issue.record("the merchant's slot was not free")
            return
        }
        for _ in 0..<3 { _ = try harness.process(stage, message) }
        #expect(try harness.payment(message.paymentId).status == .submitting, "no query was made, so nothing is inconclusive")
        stage.gate.release(held, report: .healthy)
        _ = try harness.process(stage, message)
        #expect(try harness.payment(message.paymentId).status == .authorized)
    }

    /// Defect 4: reconciliation time is measured on the database clock, not on a worker's (here 2 minutes fast).
    @Test func reconciliationWaitsOnTheDatabaseClock() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let (message, order) = try SubmitStageTests.crashedAfterSending(harness, amount: 1000, sent: false)
        let fastClock = harness.makeStage(clock: { Date().addingTimeInterval(120) })
        #expect(Self.transientCode(try harness.process(fastClock, message)) == "awaiting_reconciliation")
        #expect(harness.ledgerAuths(prefix: order).isEmpty)
    }

    /// Defect 4: `PAYPIPE_RECONCILE_GRACE` below 2 s is refused at start-up.
    @Test("a reconcile grace below 2 s is refused", arguments: ["0", "1s"])
    func tooSmallAGraceIsRefused(grace: String) throws {
        let environment = EnvironmentReader([
            "PAYPIPE_ENV": "sandbox", "PAYPIPE_DATA_KEY": Data((0..<32).map { UInt8($0) }).base64EncodedString(),
            "PAYPIPE_RECONCILE_GRACE": grace,
        ])
        let configuration = try WorkerConfiguration(stage: .submit, environment: environment)
        let logger = Logger(component: "submit", threshold: .error)
        #expect(throws: ConfigurationError.self) { _ = try SubmitStage.fromEnvironment(configuration, logger: logger, environment: environment) }
    }
}
}
