import Foundation
import PaymentStages
import Pipeline
import Postgres
import Testing

extension Integration {
@Suite struct MigrationTests {
    /// A clean database with one merchant and one `decrypted` payment; returns the payment's id.
    static func freshDecryptedPayment(on connection: PostgresConnection) throws -> UUID {
        try TestServices.resetDatabase()
        try connection.query("INSERT INTO merchants (id) VALUES ('m1')")
        let id = UUID()
        try connection.query(
            "INSERT INTO payments (id, merchant_id, job_id, job_hash, status, stage, first_received_at) VALUES ($1, 'm1', 'j1', $2, 'decrypted', 'authorize', now())",
            [id, [UInt8(1)]])
        return id
    }

    @Test func migrationsAreIdempotent() throws {
        try TestServices.resetDatabase()   // applies every migration once
        let connection = try TestServices.database()
        defer { connection.close() }
        let migrator = Migrator(migrations: PayPipeSchema.migrations, lockKey: PayPipeSchema.migrationLockKey)
        #expect(try migrator.apply(on: connection).isEmpty)
        #expect(try migrator.status(on: connection).allSatisfy { $0.appliedAt != nil })
    }

    /// Migration 3: the all-rows status index is gone (write cost only); needs_review lookups keep a partial index
    /// that the planner uses.
    @Test func paymentsKeepOnlyTheIndexesQueriesUse() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        _ = try Self.freshDecryptedPayment(on: connection)
        let names = try connection.query("SELECT indexname FROM pg_indexes WHERE tablename = 'payments' ORDER BY 1")
            .map { try $0.decode("indexname", as: String.self) }
        #expect(!names.contains("payments_status"))
        #expect(names.contains("payments_needs_review"))
        try connection.transaction { transaction in
            try transaction.simpleQuery("SET LOCAL enable_seqscan = off")
            let plan = try transaction.query("EXPLAIN SELECT id FROM payments WHERE status = 'needs_review' ORDER BY updated_at")
                .map { try $0.decode("QUERY PLAN", as: String.self) }.joined(separator: "\n")
            #expect(plan.contains("payments_needs_review"))
        }
    }

    @Test func paymentTransitionsAreGuardedInSQL() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let id = try Self.freshDecryptedPayment(on: connection)
        let store = PaymentStore()
        #expect(try store.transition(id, from: .decrypted, to: .prepared, actor: "test", on: connection) == .applied)
        // A stale writer expecting the old status changes nothing.
        #expect(try store.transition(id, from: .decrypted, to: .failed, actor: "test", errorCode: "x", on: connection) == .statusWas(.prepared))
        #expect(try store.load(id, on: connection)?.status == .prepared)
        // The audit trail is append-only.
        #expect(throws: PostgresError.self) { try connection.query("DELETE FROM payment_events") }
        // The status column refuses values outside the state machine.
        #expect(throws: PostgresError.self) { try connection.query("UPDATE payments SET status = 'paid' WHERE id = $1", [id]) }
    }

    /// Whatever ends a payment, its card data and stored gateway request are shredded in the same transaction.
    @Test func aTerminalStatusShredsCardDataInTheSameTransaction() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let id = try Self.freshDecryptedPayment(on: connection)
        try connection.query("INSERT INTO card_data (payment_id, key_id, nonce, ciphertext) VALUES ($1, 'k', $2, $3)", [id, [UInt8(1)], [UInt8(2)]])
        try connection.query(
            "INSERT INTO gateway_requests (payment_id, order_reference, request_types, key_id, nonce, ciphertext) VALUES ($1, 'o', '{AUTH}', 'k', $2, $3)",
            [id, [UInt8(1)], [UInt8(2)]])
        /// Rows still holding ciphertext, card data and gateway request together.
        func held() throws -> Int64 {
            let rows = try connection.query(
                """
                SELECT (SELECT count(*) FROM card_data WHERE payment_id = $1 AND ciphertext IS NOT NULL)
                     + (SELECT count(*) FROM gateway_requests WHERE payment_id = $1 AND ciphertext IS NOT NULL) AS n
                """, [id])
            return try #require(rows.first).decode("n", as: Int64.self)
        }
        let store = PaymentStore()
        #expect(try store.transition(id, from: .decrypted, to: .prepared, actor: "test", on: connection) == .applied)
        #expect(try held() == 2, "a non-terminal transition keeps the card data")
        try connection.simpleQuery("BEGIN")
        #expect(try store.transition(id, from: .prepared, to: .failed, actor: "test", errorCode: "x", on: connection) == .applied)
        try connection.simpleQuery("ROLLBACK")
        #expect(try held() == 2, "a rolled-back terminal transition keeps the card data")
        #expect(try store.transition(id, from: .prepared, to: .failed, actor: "test", errorCode: "x", on: connection) == .applied)
        #expect(try held() == 0)
    }

    /// Migration 11: the updates after an insert — the purge of card data and gateway request, the attempt's outcome —
    /// are HOT (no index entry, only the changed bytes logged) even when a batch filled the pages, and a payment's
    /// stage update writes its new version on the same page. Counted in the transaction itself
    /// (`pg_stat_get_xact_tuples_hot_updated`), so nothing waits for the statistics to be flushed.
    @Test func updatesAfterAnInsertStayOnTheirPage() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        try TestServices.resetDatabase()
        try connection.query("INSERT INTO merchants (id) VALUES ('m1')")
        // More rows than a page holds at any fillfactor, each with a ciphertext the size a decrypted token seals to.
        let count = 60
        let ids = (0..<count).map { _ in UUID() }
        try connection.query(
            """
            INSERT INTO payments (id, merchant_id, job_id, job_hash, order_reference, status, stage, first_received_at)
            SELECT id, 'm1', 'job-' || n, '\\x01', 'order-' || n, 'decrypted', 'authorize', now()
            FROM unnest($1::uuid[]) WITH ORDINALITY AS t(id, n)
            """, [PostgresArray(ids)])
        try connection.query(
            """
            INSERT INTO card_data (payment_id, key_id, nonce, ciphertext)
            SELECT id, 'k', '\\x0102', decode(repeat('ab', 400), 'hex') FROM unnest($1::uuid[]) AS t(id)
            """, [PostgresArray(ids)])
        try connection.query(
            """
            INSERT INTO gateway_requests (payment_id, order_reference, request_types, key_id, nonce, ciphertext)
            SELECT id, 'order-' || id, '{AUTH}', 'k', '\\x0102', decode(repeat('ab', 500), 'hex') FROM unnest($1::uuid[]) AS t(id)
            """, [PostgresArray(ids)])
        try connection.query(
            """
            INSERT INTO gateway_attempts (payment_id, order_reference, request_type, state, send_deadline, reconcile_after, site_reference)
            SELECT id, 'order-' || id, 'AUTH', 'sending', now(), now(), 'site' FROM unnest($1::uuid[]) AS t(id)
            """, [PostgresArray(ids)])
        /// The page of each payment's current row version, in id order.
        func paymentPages() throws -> [Int32] {
            try connection.query("SELECT ((ctid::text::point)[0])::int AS page FROM payments ORDER BY id").map { try $0.decode("page", as: Int32.self) }
        }
        let pages = try paymentPages()
        try connection.transaction { transaction in
            try transaction.query(
                """
                UPDATE gateway_attempts SET state = 'completed', outcome = 'authorised', transaction_reference = 'ref-' || id,
                    settle_status = '0', acquirer_response_code = '00', auth_code = 'AUTH01', masked_pan = '411111######1111',
                    finished_at = clock_timestamp()
                WHERE payment_id = ANY($1::uuid[])
                """, [PostgresArray(ids)])
            // A terminal status: the trigger of migration 2 purges card data and gateway request.
            try transaction.query(
                "UPDATE payments SET status = 'failed', stage = 'notify', updated_at = clock_timestamp() WHERE id = ANY($1::uuid[])",
                [PostgresArray(ids)])
            for table in ["card_data", "gateway_requests", "gateway_attempts"] {
                let hot = try transaction.query("SELECT pg_stat_get_xact_tuples_hot_updated($1::regclass) AS n", [table])[0]
                    .decode("n", as: Int64.self)
                #expect(hot == Int64(count), "\(table): \(hot) of \(count) updates HOT")
            }
        }
        #expect(try paymentPages() == pages, "each payment's new version on its page")
        let names = try connection.query("SELECT indexname FROM pg_indexes WHERE tablename IN ('gateway_attempts', 'webhook_deliveries')")
            .map { try $0.decode("indexname", as: String.self) }
        #expect(!names.contains("gateway_attempts_sending") && !names.contains("webhook_deliveries_event"))
    }
}
}

extension Integration {
/// The reconciler claims payments idle in a stage, once per `stuckAfter` window.
@Suite struct ReconcilerTests {
    @Test func claimsStuckPaymentsOnceAndSkipsFreshOnes() throws {
        let harness = try RuntimeHarness()
        let stuck = try harness.makePayments(3)
        let fresh = try harness.makePayments(1)
        let database = try TestServices.database()
        defer { database.close() }
        for payment in stuck {
            try database.query("UPDATE payments SET updated_at = now() - interval '10 minutes' WHERE id = $1", [payment.paymentId])
        }
        let reconciler = Reconciler(stage: .authorize, stuckAfterSeconds: 300)
        let claimed = try reconciler.claimStuck(on: database)
        #expect(Set(claimed.map(\.paymentId)) == Set(stuck.map(\.paymentId)))
        #expect(!claimed.contains { $0.paymentId == fresh[0].paymentId })
        #expect(try reconciler.claimStuck(on: database).isEmpty, "a claimed payment is not re-driven again within the window")
        #expect(try Reconciler(stage: .decrypt, stuckAfterSeconds: 1).claimStuck(on: database).isEmpty)
    }

    /// The gauges behind PayPipeQueueAgeHigh, PayPipeReconcilerBacklog and PayPipeNeedsReview.
    @Test func backlogGivesTheOldestAgeTheStuckCountAndNeedsReview() throws {
        let harness = try RuntimeHarness()
        let payments = try harness.makePayments(4)
        let database = try TestServices.database()
        defer { database.close() }
        let reconciler = Reconciler(stage: .authorize, stuckAfterSeconds: 300)
        #expect(try Reconciler(stage: .submit, stuckAfterSeconds: 300).backlog(on: database)
                == Reconciler.Backlog(oldestAgeSeconds: 0, stuck: 0, needsReview: 0), "an empty stage")
        #expect(try reconciler.backlog(on: database).stuck == 0)
        try database.query("UPDATE payments SET updated_at = now() - interval '20 minutes' WHERE id = $1", [payments[0].paymentId])
        try database.query("UPDATE payments SET updated_at = now() - interval '10 minutes' WHERE id = $1", [payments[1].paymentId])
        try database.query("UPDATE payments SET status = 'needs_review', stage = 'notify' WHERE id = $1", [payments[2].paymentId])
        let backlog = try reconciler.backlog(on: database)
        #expect(backlog.oldestAgeSeconds >= 1200 && backlog.oldestAgeSeconds < 1260)
        #expect(backlog.stuck == 2)
        #expect(backlog.needsReview == 1)
        let metrics = PaymentMetrics(StageMetrics(registry: MetricsRegistry(), stage: .authorize))
        metrics.stageBacklog(oldestAgeSeconds: backlog.oldestAgeSeconds, stuck: backlog.stuck, needsReview: backlog.needsReview)
        #expect(metrics.runtime.registry.value(PaymentMetrics.Name.reconcilerBacklog, labels: ["stage": "authorize"]) == 2)
    }

    /// `paypipe_payments_failed_total` comes from the committed audit trail: failures after the first read, by the
    /// stage the payment failed in. (Before, the counter was registered but never incremented.)
    @Test func failureTallyCountsCommittedFailuresOfItsStage() throws {
        let harness = try RuntimeHarness()
        let payments = try harness.makePayments(3)
        let database = try TestServices.database()
        defer { database.close() }
        _ = try PaymentStore().recordFailure(PaymentFailure(paymentId: payments[0].paymentId, code: "early", reason: "before"), on: database)
        var authorize = FailureTally(), submit = FailureTally()
        #expect(try authorize.newFailures(of: .authorize, on: database).isEmpty, "the first read only finds the end")
        _ = try submit.newFailures(of: .submit, on: database)
        for payment in payments.dropFirst() {
            _ = try PaymentStore().recordFailure(PaymentFailure(paymentId: payment.paymentId, code: "signature_invalid", reason: "test"), on: database)
        }
        let counted = try authorize.newFailures(of: .authorize, on: database)
        #expect(counted.map(\.code) == ["signature_invalid"] && counted.map(\.count) == [2])
        #expect(try submit.newFailures(of: .submit, on: database).isEmpty, "failed in authorize, not submit")
        #expect(try authorize.newFailures(of: .authorize, on: database).isEmpty, "each failure counted once")
    }

    /// Migration 25 on a database made before it: operations stored under every processor's names keep their values,
    /// the new CHECKs accept any name of the stored shape (a new connector's) and refuse others, exactly as
    /// ``StoredRequestName/fits(_:)`` decides in Swift.
    @Test func requestNamesAreCheckedByShapeAfterAnUpgrade() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        try connection.simpleQuery("DROP SCHEMA public CASCADE; CREATE SCHEMA public;")
        let before = PayPipeSchema.migrations.filter { $0.version < 25 }
        _ = try Migrator(migrations: before, lockKey: PayPipeSchema.migrationLockKey).apply(on: connection)
        try connection.query("INSERT INTO merchants (id) VALUES ('m1')")
        let payment = try OperationStoreTests.authorizedPayment(reset: false, on: connection)
        guard case .finished(let void) = try OperationStoreTests.run(OperationStoreTests.request(.void, "v1", payment: payment), on: connection) else {
            throw TestFailure("the void did not finish")
        }
        let old = ["TRANSACTIONQUERY", "REFUND", "CAPTURE", "REVERSAL", "QUERY"]
        for name in old {
            try connection.query("INSERT INTO operation_attempts (operation_id, request_type, state) VALUES ($1, $2, 'completed')", [void.id, name])
        }
        func stored() throws -> [String] {
            try connection.query("SELECT request_type FROM operation_attempts WHERE operation_id = $1 ORDER BY id", [void.id])
                .map { try $0.decode("request_type", as: String.self) }
        }
        let storedBefore = try stored()
        #expect(storedBefore == ["TRANSACTIONUPDATE"] + old)
        #expect(try connection.query("SELECT request_type FROM payment_operations WHERE id = $1", [void.id])[0]
            .decode("request_type", as: String?.self) == "TRANSACTIONUPDATE")

        #expect(try Migrator(migrations: PayPipeSchema.migrations, lockKey: PayPipeSchema.migrationLockKey).apply(on: connection) == [25])
        #expect(try stored() == storedBefore)

        let names = ["AUTHORIZATION_CANCEL", "lower_capture", "Q", String(repeating: "N", count: StoredRequestName.maxLength),
                     "", "9A", "_A", "A B", "A-B", "A'B", "É", String(repeating: "N", count: StoredRequestName.maxLength + 1)]
        for name in names {
            let accepted: Bool
            do {
                try connection.transaction {
                    try $0.query("INSERT INTO operation_attempts (operation_id, request_type, state) VALUES ($1, $2, 'completed')", [void.id, name])
                    try $0.query("UPDATE payment_operations SET request_type = $2 WHERE id = $1", [void.id, name])
                    throw Undo()
                }
                accepted = false
            } catch is Undo {
                accepted = true
            } catch {
                accepted = false
            }
            #expect(accepted == StoredRequestName.fits(name), "\(name): the database and StoredRequestName agree")
        }
        #expect(try stored() == storedBefore)
    }

    private struct Undo: Error {}
}
}
