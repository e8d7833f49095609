import Dispatch
import Foundation
import PaymentStages
@testable import Pipeline
import Postgres
import Synchronization
import Testing

extension Integration {
/// Migration 7 and the operation protocol's database half on the real PostgreSQL: the lifecycle starts when a payment
/// becomes authorised, the invariants hold in SQL whatever writes, and concurrent operations of one payment never
/// exceed what it holds.
@Suite struct OperationStoreTests {
    static let timing = OperationStore.SendTiming(sendWindow: 30, settleSeconds: 5)

    /// A clean database with merchant `m1` and one payment for `amount`, authorised through `PaymentStore` (so the
    /// lifecycle trigger starts it) with a completed AUTH attempt answered with `settleStatus`.
    static func authorizedPayment(
        amount: Int64 = 1000, mode: CaptureMode = .automatic, captureWithin: Double? = nil, settleStatus: String = "0",
        jobId: String = "j1", reset: Bool = true, on connection: PostgresConnection
    ) throws -> UUID {
        if reset {
            try TestServices.resetDatabase()
            try connection.query("INSERT INTO merchants (id) VALUES ('m1')")
        }
        let id = UUID()
        try connection.query(
            """
            INSERT INTO payments (id, merchant_id, job_id, job_hash, amount_minor, currency, status, stage, first_received_at)
            VALUES ($1, 'm1', $2, $3, $4, 'GBP', 'submitting', 'submit', now())
            """, [id, jobId, [UInt8(1)], amount])
        try PaymentStore().setCapturePolicy(id, CapturePolicy(mode: mode, captureWithin: captureWithin), on: connection)
        try connection.query(
            """
            INSERT INTO gateway_attempts (payment_id, order_reference, request_type, state, outcome, transaction_reference, settle_status, finished_at)
            VALUES ($1, $2, 'AUTH', 'completed', 'authorized', $3, $4, now())
            """, [id, "o-\(jobId)", "9-9-\(jobId)", settleStatus])
        #expect(try PaymentStore().transition(id, from: .submitting, to: .authorized, actor: "test", on: connection) == .applied)
        return id
    }

    static func request(_ kind: OperationRequest.Kind, _ operationId: String, payment: UUID, amount: Int64? = nil) -> OperationRequest {
        OperationRequest(kind: kind, operationId: operationId, merchantId: "m1", payment: .paymentId(payment), amount: amount)
    }

    /// Plans and, when a request is to be sent, "sends" it (the gateway confirms) in a second transaction, as the worker
    /// does around its call.
    static func run(_ request: OperationRequest, on connection: PostgresConnection) throws -> OperationSteps.Plan {
        let steps = OperationSteps()
        let plan = try connection.transaction { try steps.plan(request, transport: .webservices, timing: timing, on: $0) }
        guard case .send(let operation, let attempt, _) = plan else { return plan }
        let settled = try connection.transaction {
            try steps.settle(operation, attempt: attempt, answer: .confirmed(transactionReference: nil), actor: "test", on: $0)
        }
        guard case .finished(let finished) = settled else { throw TestFailure("not finished: \(settled)") }
        return .finished(finished)
    }

    static func money(_ id: UUID, on connection: PostgresConnection) throws -> MoneyLifecycle? {
        try PaymentStore().money(id, forUpdate: false, on: connection)?.lifecycle
    }

    /// The settlement the poll will record: `captured → settled`.
    static func settle(_ id: UUID, on connection: PostgresConnection) throws {
        let before = try #require(try money(id, on: connection))
        var after = before
        after.status = .settled
        #expect(try PaymentStore().changeLifecycle(id, try CheckedLifecycleChange(from: before, to: after), settleStatus: .settled,
                                                   actor: "test", operationId: nil, detail: "settled", on: connection))
    }

    @Test func theLifecycleStartsAsMoneyLifecycleSaysWhenThePaymentIsAuthorized() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let automatic = try Self.authorizedPayment(on: connection)
        #expect(try Self.money(automatic, on: connection) == MoneyLifecycle.afterAuthorization(amount: 1000, mode: .automatic))
        let manual = try Self.authorizedPayment(amount: 700, mode: .manual, captureWithin: 3600, jobId: "j2", reset: false, on: connection)
        let lifecycle = try #require(try Self.money(manual, on: connection))
        let deadline = try #require(lifecycle.captureDeadline)
        #expect(lifecycle == MoneyLifecycle.afterAuthorization(amount: 700, mode: .manual, captureDeadline: deadline))
        #expect(abs(deadline.timeIntervalSinceNow - 3600) < 120)
        // Not before: a payment still submitting has no lifecycle.
        let rows = try connection.query("SELECT count(*)::bigint AS n FROM payments WHERE lifecycle IS NULL AND status = 'authorized'")
        #expect(try rows[0].decode("n", as: Int64.self) == 0)
    }

    /// Migration 9: the lifecycle trigger runs once on a payment's way to `authorized` (when it starts the lifecycle)
    /// and once per lifecycle change, not for the status changes before, which it could only pass through. Counted by
    /// PostgreSQL's own function statistics for the transaction.
    /// The AUTH the gateway holds is the last attempt that authorised it or the last status query that found it
    /// (`found`, or `stale_found` for an attempt no longer current); a query that found nothing, or an uncertain AUTH,
    /// changes nothing. Queries are told by their outcome, not by a processor's request name.
    @Test func theGatewayFactsAreTheLastAuthorisationOrTheQueryThatFoundIt() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let payment = try Self.authorizedPayment(on: connection)
        func reference() throws -> String? { try OperationStore().gatewayFacts(paymentId: payment, on: connection)?.transactionReference }
        func attempt(_ type: String, _ outcome: String, _ reference: String?) throws {
            try connection.query(
                """
                INSERT INTO gateway_attempts (payment_id, order_reference, request_type, state, outcome, transaction_reference, finished_at)
                VALUES ($1, 'o-j1', $2, 'completed', $3, $4, now())
                """, [payment, type, outcome, reference])
        }
        #expect(try reference() == "9-9-j1")
        try attempt("AUTH", "uncertain", nil)
        try attempt("TRANSACTIONQUERY", "found", "9-9-found")
        #expect(try reference() == "9-9-found")
        try attempt("TRANSACTIONQUERY", "not_found", nil)
        try attempt("TRANSACTIONQUERY", "stale_found", "9-9-stale")
        #expect(try reference() == "9-9-stale")
        try attempt("TRANSACTIONQUERY", "inconclusive", "9-9-ignored")
        try attempt("AUTH", "declined", "9-9-declined")
        #expect(try reference() == "9-9-stale")
    }

    @Test func theLifecycleTriggerRunsOnlyWhereTheLifecycleCanChange() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        try TestServices.resetDatabase()
        try connection.query("INSERT INTO merchants (id) VALUES ('m1')")
        let id = UUID()
        let calls: Int64 = try connection.transaction { transaction in
            try transaction.query("SET LOCAL track_functions = 'pl'")
            try transaction.query(
                """
                INSERT INTO payments (id, merchant_id, job_id, job_hash, amount_minor, currency, status, stage, first_received_at)
                VALUES ($1, 'm1', 'j1', '\\x01', 1000, 'GBP', 'decrypted', 'authorize', now())
                """, [id])
            let store = PaymentStore()
            for (from, to) in [(PaymentStatus.decrypted, PaymentStatus.prepared), (.prepared, .submitting), (.submitting, .authorized)] {
                #expect(try store.transition(id, from: from, to: to, actor: "test", on: transaction) == .applied)
            }
            try store.markDone(id, on: transaction)
            let rows = try transaction.query(
                "SELECT coalesce(sum(calls), 0)::bigint AS n FROM pg_stat_xact_user_functions WHERE funcname = 'payments_lifecycle'")
            return try rows[0].decode("n", as: Int64.self)
        }
        #expect(calls == 1)
        #expect(try Self.money(id, on: connection) == MoneyLifecycle.afterAuthorization(amount: 1000, mode: .automatic))
        // A status change away from `authorized` while the lifecycle exists is still refused (by the CHECK).
        #expect(throws: PostgresError.self) {
            try connection.query("UPDATE payments SET status = 'needs_review' WHERE id = $1", [id])
        }
    }

    /// Migration 10: the CHECK is one call of `paypipe_lifecycle_invariants`, a stored tree of a few nodes that each
    /// statement writing `payments` reads back cheaply, and it decides exactly as migration 7's expression did. Both are
    /// evaluated over every combination of status, lifecycle and three amounts (NULLs and the boundaries included),
    /// the expression inline as migration 7's CHECK had it.
    @Test func theLifecycleInvariantsAreOneFunctionThatDecidesAsMigration7() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        try TestServices.resetDatabase()
        let stored = try connection.query("""
            SELECT length(conbin::text)::bigint AS n FROM pg_constraint
            WHERE conrelid = 'payments'::regclass AND conname = 'payments_lifecycle_invariants'
            """)
        #expect(try stored[0].decode("n", as: Int64.self) < 2_000)

        let migration7 = PayPipeSchema.lifecycleInvariantsExpression
        #expect(migration7.contains("CASE lifecycle"))
        let amounts = "(VALUES (NULL::bigint), (-1), (0), (1), (999), (1000), (1001))"
        let rows = try connection.query("""
            SELECT count(*)::bigint AS cases,
                   count(*) FILTER (WHERE old IS DISTINCT FROM new)::bigint AS disagreeing,
                   count(*) FILTER (WHERE coalesce(new, true))::bigint AS accepted
            FROM (
                SELECT (\(migration7)) AS old,
                       paypipe_lifecycle_invariants(status, lifecycle, authorized_minor, captured_minor, refunded_minor) AS new
                FROM (VALUES ('decrypted'), ('authorized'), ('declined')) AS s(status),
                     (VALUES (NULL::text), ('authorized'), ('captured'), ('settled'), ('partially_refunded'), ('refunded'), ('voided')) AS l(lifecycle),
                     \(amounts) AS a(authorized_minor), \(amounts) AS c(captured_minor), \(amounts) AS r(refunded_minor)
            ) evaluated
            """)
        let cases = try rows[0].decode("cases", as: Int64.self)
        #expect(cases == 3 * 7 * 7 * 7 * 7)
        #expect(try rows[0].decode("disagreeing", as: Int64.self) == 0)
        // Both verdicts occur, so the comparison covers refusals as well as acceptances.
        let accepted = try rows[0].decode("accepted", as: Int64.self)
        #expect(accepted > 0 && accepted < cases)
    }

    /// The CHECK and the trigger hold whatever statement writes, bypassing the store.
    @Test func theDatabaseRefusesStatesAndChangesOutsideTheDiagram() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let id = try Self.authorizedPayment(amount: 1000, mode: .manual, settleStatus: "2", on: connection)
        func refused(_ sql: String) {
            #expect(throws: PostgresError.self, "\(sql)") { try connection.query(sql, [id]) }
        }
        refused("UPDATE payments SET lifecycle = 'captured', captured_minor = 1001 WHERE id = $1")   // captured > authorised
        refused("UPDATE payments SET lifecycle = 'settled' WHERE id = $1")                          // not an edge
        refused("UPDATE payments SET refunded_minor = 1 WHERE id = $1")                              // refund before capture
        try connection.query("UPDATE payments SET lifecycle = 'captured', captured_minor = 600 WHERE id = $1", [id])
        refused("UPDATE payments SET captured_minor = 700 WHERE id = $1")                            // raised after the capture
        refused("UPDATE payments SET lifecycle = 'partially_refunded', refunded_minor = 100 WHERE id = $1") // not settled
        try connection.query("UPDATE payments SET lifecycle = 'settled' WHERE id = $1", [id])
        refused("UPDATE payments SET lifecycle = 'partially_refunded', refunded_minor = 601 WHERE id = $1") // refunded > settled
        try connection.query("UPDATE payments SET lifecycle = 'partially_refunded', refunded_minor = 100 WHERE id = $1", [id])
        refused("UPDATE payments SET refunded_minor = 50 WHERE id = $1")                             // refunds never shrink
        refused("UPDATE payments SET lifecycle = 'voided', captured_minor = 0, refunded_minor = 0 WHERE id = $1") // settled: no void

        let voided = try Self.authorizedPayment(amount: 500, jobId: "j2", reset: false, on: connection)
        try connection.query("UPDATE payments SET lifecycle = 'voided', captured_minor = 0 WHERE id = $1", [voided])
        // No refund of a voided payment, and nothing leaves `voided`.
        #expect(throws: PostgresError.self) {
            try connection.query("UPDATE payments SET lifecycle = 'partially_refunded', captured_minor = 500, refunded_minor = 100 WHERE id = $1", [voided])
        }
        #expect(throws: PostgresError.self) { try connection.query("UPDATE payments SET lifecycle = 'captured', captured_minor = 500 WHERE id = $1", [voided]) }
        // One open operation per payment, whoever inserts.
        let insert = """
            INSERT INTO payment_operations (merchant_id, operation_id, payment_id, kind, content_hash, state) VALUES ('m1', $2, $1, 'void', '\\x01', 'requested')
            """
        try connection.query(insert, [voided, "a"])
        #expect(throws: PostgresError.self) { try connection.query(insert, [voided, "b"]) }
    }

    /// The ordered story of the issue at the store level: manual capture, a partial capture, settlement, two partial
    /// refunds, a refused over-refund; every step audited.
    @Test func partialCaptureSettlementAndPartialRefunds() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let id = try Self.authorizedPayment(amount: 1000, mode: .manual, settleStatus: "2", on: connection)
        guard case .finished(let capture) = try Self.run(Self.request(.capture, "cap-1", payment: id, amount: 800), on: connection) else {
            throw TestFailure("capture not finished")
        }
        #expect(capture.state == .succeeded)
        #expect(capture.request == .capture(transactionReference: "9-9-j1", amount: 800))
        // Stored under the processor's names and settle status, as before the request became neutral.
        #expect(capture.requestType == "TRANSACTIONUPDATE" && capture.updatedSettleStatus == .pendingSettlement)
        #expect(try Self.money(id, on: connection)?.status == .captured)
        #expect(try Self.money(id, on: connection)?.capturedAmount == 800)
        // A second capture: one capture per authorisation.
        guard case .finished(let again) = try Self.run(Self.request(.capture, "cap-2", payment: id, amount: 100), on: connection) else {
            throw TestFailure("second capture not finished")
        }
        #expect(again.state == .failed && again.errorCode == "already_captured")

        try Self.settle(id, on: connection)
        for (operationId, amount) in [("ref-1", Int64(300)), ("ref-2", 400)] {
            guard case .finished(let refund) = try Self.run(Self.request(.refund, operationId, payment: id, amount: amount), on: connection) else {
                throw TestFailure("refund not finished")
            }
            #expect(refund.state == .succeeded)
            #expect(refund.request == .refund(parentTransactionReference: "9-9-j1", amount: amount) && refund.requestType == "REFUND")
        }
        guard case .finished(let over) = try Self.run(Self.request(.refund, "ref-3", payment: id, amount: 101), on: connection) else {
            throw TestFailure("over-refund not finished")
        }
        #expect(over.state == .failed && over.errorCode == "amount_exceeds_refundable")
        let final = try #require(try Self.money(id, on: connection))
        #expect(final.status == .partiallyRefunded && final.capturedAmount == 800 && final.refundedAmount == 700)
        let audited = try connection.query(
            "SELECT lifecycle_from, lifecycle_to, operation_id FROM payment_events WHERE payment_id = $1 AND lifecycle_to IS NOT NULL ORDER BY id", [id])
            .map { "\(try $0.decode("lifecycle_from", as: String.self))→\(try $0.decode("lifecycle_to", as: String.self)):\(try $0.decode("operation_id", as: String?.self) ?? "-")" }
        #expect(audited == ["authorized→captured:cap-1", "captured→settled:-", "settled→partially_refunded:ref-1", "partially_refunded→partially_refunded:ref-2"])
        #expect(try OperationStore().operations(paymentId: id, on: connection).map(\.operationId) == ["cap-1", "cap-2", "ref-1", "ref-2", "ref-3"])
    }

    @Test func aReusedOperationIdIsTheSameOperationOrAConflict() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let id = try Self.authorizedPayment(on: connection)
        try Self.settle(id, on: connection)
        guard case .finished(let first) = try Self.run(Self.request(.refund, "r", payment: id, amount: 100), on: connection) else {
            throw TestFailure("refund not finished")
        }
        // The same content (here by job id instead of the same payment id would be other content): reported again.
        guard case .finished(let same) = try Self.run(Self.request(.refund, "r", payment: id, amount: 100), on: connection) else {
            throw TestFailure("duplicate not finished")
        }
        #expect(same.id == first.id)
        for other in [Self.request(.refund, "r", payment: id, amount: 101), Self.request(.void, "r", payment: id)] {
            guard case .conflict(let existing) = try Self.run(other, on: connection) else { throw TestFailure("no conflict for \(other)") }
            #expect(existing.id == first.id)
        }
        #expect(try Self.money(id, on: connection)?.refundedAmount == 100)
    }

    /// Concurrent refunds of one payment from several connections, each retried while another is open (the worker's
    /// retry): exactly as many succeed as the settled amount holds, the others are refused, and the refunded total never
    /// exceeds it.
    @Test func concurrentPartialRefundsNeverExceedTheSettledAmount() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let id = try Self.authorizedPayment(amount: 1000, on: connection)
        try Self.settle(id, on: connection)
        let results = Mutex<[String: String]>([:])
        let group = DispatchGroup()
        for n in 0..<6 {
            group.enter()
            DispatchQueue.global().async {
                defer { group.leave() }
                do {
                    let own = try TestServices.database()
                    defer { own.close() }
                    let request = Self.request(.refund, "concurrent-\(n)", payment: id, amount: 300)
                    for _ in 0..<400 {
                        let plan = try Self.run(request, on: own)
                        if case .finished(let operation) = plan {
                            results.withLock { $0[request.operationId] = operation.errorCode ?? operation.state.rawValue }
                            return
                        }
                        Thread.sleep(forTimeInterval: 0.01)
                    }
                    results.withLock { $0[request.operationId] = "never finished" }
                } catch {
                    results.withLock { $0["concurrent-\(n)"] = "error \(error)" }
                }
            }
        }
        group.wait()
        let outcomes = results.withLock { $0 }
        #expect(outcomes.values.filter { $0 == "succeeded" }.count == 3, "\(outcomes)")
        #expect(outcomes.values.filter { $0 == "amount_exceeds_refundable" }.count == 3, "\(outcomes)")
        let final = try #require(try Self.money(id, on: connection))
        #expect(final.refundedAmount == 900 && final.status == .partiallyRefunded)
    }

    /// Two transactions that bypass the protocol and both add a refund under the payment's lock: the second fails in
    /// SQL, never exceeding the settled amount.
    @Test func concurrentRawRefundsAreStoppedByTheCheck() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let id = try Self.authorizedPayment(amount: 1000, on: connection)
        try Self.settle(id, on: connection)
        let add = "UPDATE payments SET lifecycle = 'partially_refunded', refunded_minor = refunded_minor + 600 WHERE id = $1"
        try connection.simpleQuery("BEGIN")
        try connection.query(add, [id])
        let second = Mutex<String>("pending")
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            do {
                let other = try TestServices.database()
                defer { other.close() }
                try other.query(add, [id])   // waits for the first transaction's row lock
                second.withLock { $0 = "applied" }
            } catch {
                second.withLock { $0 = "refused" }
            }
            done.signal()
        }
        // The second waits for the first's row lock: both run under it, one after the other.
        let watcher = try TestServices.database()
        defer { watcher.close() }
        try TestServices.eventually("the second refund waits for the payment's row lock") {
            try watcher.query("SELECT count(*)::bigint AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE payments SET lifecycle%'")[0]
                .decode("n", as: Int64.self) == 1
        }
        try connection.simpleQuery("COMMIT")
        done.wait()
        #expect(second.withLock { $0 } == "refused")
        #expect(try Self.money(id, on: connection)?.refundedAmount == 600)
    }

    /// A lost REFUND answer is never resent: the redelivered operation goes to review, and the payment takes no other
    /// operation meanwhile. A lost TRANSACTIONUPDATE answer is queried first, and a confirmed one is not resent.
    @Test func lostAnswersAreReconciledNeverResent() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let steps = OperationSteps()
        // Attempts whose reconciliation time has come at once (a lost answer is queried only after it).
        let timing = OperationStore.SendTiming(sendWindow: 0, settleSeconds: 0)
        let id = try Self.authorizedPayment(amount: 1000, mode: .manual, settleStatus: "2", on: connection)
        let capture = Self.request(.capture, "cap", payment: id)
        guard case .send(let operation, let attempt, _) = try connection.transaction({ try steps.plan(capture, transport: .webservices, timing: timing, on: $0) }) else {
            throw TestFailure("capture not sent")
        }
        let settled = try connection.transaction { try steps.settle(operation, attempt: attempt, answer: .uncertain(code: "paypipe.transport", reason: "timeout"), actor: "t", on: $0) }
        guard case .retry("reconciliation_pending", "TRANSACTIONUPDATE answer lost (paypipe.transport): the AUTH is queried before anything else", let until?) = settled else {
            throw TestFailure("not a retry at the reconciliation time: \(settled)")
        }
        // Its reconciliation time (settle seconds 0: now) is when the message comes back.
        #expect(abs(until.timeIntervalSinceNow) < 60)
        // Redelivered: a status query, not a resend.
        guard case .query(let queried, let query, let reference) = try connection.transaction({ try steps.plan(capture, transport: .webservices, timing: timing, on: $0) }) else {
            throw TestFailure("no query planned")
        }
        #expect(reference == "9-9-j1")
        let result = try connection.transaction {
            try steps.reconciled(queried, query: query, queried: .init(settleStatus: .pendingSettlement, settleBaseAmount: 1000), actor: "t", on: $0)
        }
        guard case .finished(let finished) = result else { throw TestFailure("not finished: \(result)") }
        #expect(finished.state == .succeeded)
        #expect(try steps.store.attempts(finished.id, on: connection).map(\.requestType) == ["TRANSACTIONUPDATE", "TRANSACTIONQUERY"])

        try Self.settle(id, on: connection)
        let refund = Self.request(.refund, "ref", payment: id, amount: 100)
        guard case .send(let refundOperation, let refundAttempt, _) = try connection.transaction({ try steps.plan(refund, transport: .webservices, timing: timing, on: $0) }) else {
            throw TestFailure("refund not sent")
        }
        let lost = try connection.transaction { try steps.settle(refundOperation, attempt: refundAttempt, answer: .uncertain(code: "paypipe.transport", reason: "reset"), actor: "t", on: $0) }
        guard case .review(let reviewed) = lost else { throw TestFailure("refund not for review: \(lost)") }
        #expect(reviewed.errorCode == "refund_outcome_unknown")
        // Redelivered: still review, no new attempt; another refund is refused while it is for review (only an operator
        // ends it: waiting would exhaust the retries).
        guard case .review = try connection.transaction({ try steps.plan(refund, transport: .webservices, timing: timing, on: $0) }) else {
            throw TestFailure("redelivered refund not for review")
        }
        #expect(try steps.store.attempts(reviewed.id, on: connection).count == 1)
        guard case .finished(let refused) = try connection.transaction({ try steps.plan(Self.request(.refund, "ref-2", payment: id, amount: 1), transport: .webservices, timing: timing, on: $0) }) else {
            throw TestFailure("second refund not refused")
        }
        #expect(refused.state == .failed && refused.errorCode == "operation_under_review")
        #expect(try Self.money(id, on: connection)?.refundedAmount == 0)
    }

    @Test func jwtMerchantsOperationsFailNotSupported() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let id = try Self.authorizedPayment(on: connection)
        let plan = try connection.transaction { try OperationSteps().plan(Self.request(.void, "v", payment: id), transport: .jwt, timing: Self.timing, on: $0) }
        guard case .finished(let operation) = plan else { throw TestFailure("not finished: \(plan)") }
        #expect(operation.state == .failed && operation.errorCode == "operation_not_supported")
        #expect(try Self.money(id, on: connection)?.status == .captured)
    }
}
}
