import Foundation
import HTTP
import PaymentStages
import Pipeline
import Postgres
import Testing

/// The submit stage's set-based statements on the real PostgreSQL and the gateway simulator: the promised rows and
/// outcomes, a plain batch settled in a few statements, and the odd messages of a mixed batch left to the
/// per-message steps.
extension Integration {
@Suite struct SubmitBulkTests {
    /// Authorised, declined, field error (permanent), manual review, then answers the fast path leaves alone:
    /// uncertain (99999, forged signature, dropped connection) and transient (record locked, HTTP 500).
    static let amounts: [Int64] = [1000, 1051, 1091, 1094, 1099, 1092, 1096, 1093, 1097, 1001]

    static func makeStage(_ harness: SubmitHarness) -> SubmitStage {
        let vault = harness.authorize.vault
        return SubmitStage(
            directory: MerchantDirectory(store: MerchantStore(vault: vault), ttl: 0),
            requests: GatewayRequestStore(vault: vault),
            client: TrustPaymentsClient(http: HTTPClientConfiguration(connectTimeout: 0.5, totalTimeout: 1), transport: .init(deployment: .sandbox)),
            settings: SubmitSettings(reconcileGrace: 0.2, maxInconclusiveQueries: 2, circuitFailureThreshold: 100,
                                     circuitOpenSeconds: 0.5, merchantConcurrency: 8, sendWindow: 0.3))
    }

    /// Statements a connection executed through its prepared statements (each execution plans once), and how often
    /// the per-message path's payment lock ran.
    struct StatementCount {
        let total: Int64
        let perMessageLocks: Int64

        static func read(_ connection: PostgresConnection) throws -> StatementCount {
            let row = try connection.query(
                """
                SELECT coalesce(sum(generic_plans + custom_plans), 0)::bigint AS total,
                       coalesce(sum(generic_plans + custom_plans) FILTER (WHERE statement LIKE '%FROM payments WHERE id = $1 FOR UPDATE'), 0)::bigint AS locks
                FROM pg_prepared_statements
                """)[0]
            return StatementCount(total: try row.decode("total", as: Int64.self), perMessageLocks: try row.decode("locks", as: Int64.self))
        }
    }

    /// Runs one batch through `stage.process` on a connection of its own; returns the results and the statements
    /// the batch executed (the counting query itself excluded).
    static func process(
        _ stage: SubmitStage, _ batch: [StageMessage], harness: SubmitHarness
    ) throws -> (results: [Result<StageOutcome, StageFailure>], statements: Int64, perMessageLocks: Int64) {
        let database = try harness.authorize.database()
        defer { database.close() }
        let before = try StatementCount.read(database)
        let results = stage.process(batch, database: database)
        let after = try StatementCount.read(database)
        return (results, after.total - before.total - 1, after.perMessageLocks - before.perMessageLocks)
    }

    /// An outcome with the payment id abstracted (the two paths run on different payments).
    static func shape(_ result: Result<StageOutcome, StageFailure>, _ message: StageMessage) -> String {
        switch result {
        case .success(.handOff(let handOff)): "handOff \(handOff.target) \(handOff.message == message ? "self" : "other")"
        case .success(let other): "\(other)"
        case .failure(.transient(let code, _)), .failure(.waiting(let code, _, _)): "transient \(code)"
        case .failure(let failure): "failure \(failure)"
        }
    }

    /// Everything the stage writes for one payment, with the per-payment values (transaction and order references)
    /// abstracted: the payment row, its audit events in order, its attempts in order, and the purge of its secrets.
    static func snapshot(_ id: UUID, harness: SubmitHarness) throws -> [String] {
        let database = try harness.authorize.database()
        defer { database.close() }
        let payment = try database.query(
            """
            SELECT status || ' ' || stage || ' ' || coalesce(error_code, '-') || ' ' || coalesce(error_message, '-') AS line
            FROM payments WHERE id = $1
            """, [id])
        let attempts = try database.query(
            """
            SELECT a.request_type || ' ' || a.state || ' ' || coalesce(a.outcome, '-') || ' ' || coalesce(a.error_code, '-') || ' '
                   || coalesce(a.error_message, '-') || ' ' || coalesce(a.settle_status, '-') || ' ' || coalesce(a.acquirer_response_code, '-')
                   || ' ' || coalesce(a.auth_code, '-') || ' ' || coalesce(a.masked_pan, '-')
                   || ' ref:' || (a.transaction_reference IS NOT NULL)::text || ' finished:' || (a.finished_at IS NOT NULL)::text
                   || ' ordered:' || (a.started_at <= coalesce(a.finished_at, a.started_at))::text
                   || ' order:' || (a.order_reference = g.order_reference || '.' || left(replace(a.payment_id::text, '-', ''), 12))::text
                   || ' window:' || (a.send_deadline > a.started_at AND a.reconcile_after > a.send_deadline)::text
                   || ' site:' || coalesce(a.site_reference, '-') AS line,
                   coalesce(a.transaction_reference, '') AS reference
            FROM gateway_attempts a JOIN gateway_requests g ON g.payment_id = a.payment_id
            WHERE a.payment_id = $1 ORDER BY a.id
            """, [id])
        let references = try attempts.map { try $0.decode("reference", as: String.self) }.filter { !$0.isEmpty }
        let events = try database.query(
            """
            SELECT coalesce(from_status, '-') || '→' || to_status || ' ' || stage || ' ' || actor || ' ' || coalesce(error_code, '-')
                   || ' ' || coalesce(detail, '-') AS line
            FROM payment_events WHERE payment_id = $1 ORDER BY id
            """, [id])
        let secrets = try database.query(
            """
            SELECT 'card purged:' || (SELECT bool_and(ciphertext IS NULL AND nonce IS NULL AND purged_at IS NOT NULL) FROM card_data WHERE payment_id = $1)::text
                   || ' request purged:' || (SELECT bool_and(ciphertext IS NULL AND nonce IS NULL AND purged_at IS NOT NULL) FROM gateway_requests WHERE payment_id = $1)::text AS line
            """, [id])
        return try (Array(payment) + Array(events) + Array(attempts) + Array(secrets)).map { row in
            var line = try row.decode("line", as: String.self)
            for reference in references { line = line.replacingOccurrences(of: reference, with: "<ref>") }
            return line
        }
    }

    /// Every answer the batch's statements settle leaves the rows the stage promises, and the rest is left to the
    /// per-message steps in the same transaction.
    @Test func aMixedBatchLeavesThePromisedRows() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let prepared = try Self.amounts.map { try harness.preparedPayment(amount: $0) }
        let batch = prepared.map(\.message)
        let run = try Self.process(Self.makeStage(harness), batch, harness: harness)
        let shapes = zip(run.results, batch).map { Self.shape($0, $1) }
        let rows = try batch.map { try Self.snapshot($0.paymentId, harness: harness) }
        #expect(shapes[0] == "handOff notify self")
        #expect(rows[0].first?.hasPrefix("authorized notify") == true)
        #expect(rows[0].last == "card purged:true request purged:true")
        #expect(rows[1].first?.hasPrefix("declined notify gateway_70000") == true)
        #expect(rows[2].first?.hasPrefix("failed notify gateway_30000") == true)
        #expect(rows[3].first?.hasPrefix("needs_review notify gateway_60034") == true)
        #expect(shapes[4] == "transient gateway_outcome_uncertain")
        #expect(rows[4].first?.hasPrefix("submitting submit") == true)
        #expect(rows[4].last == "card purged:false request purged:false")
        #expect(try prepared.map { try harness.authCount($0.orderReference) }.allSatisfy { $0 <= 1 }, "never two AUTHs")
    }

    @Test func aPlainBatchIsSettledInAFewStatements() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let amounts: [Int64] = [1000, 1001, 1002, 1051, 1052, 1091, 1094, 1003]
        let prepared = try amounts.map { try harness.preparedPayment(amount: $0) }
        let batch = prepared.map(\.message)
        let run = try Self.process(Self.makeStage(harness), batch, harness: harness)
        #expect(zip(run.results, batch).map { Self.shape($0, $1) } == Array(repeating: "handOff notify self", count: batch.count))
        for (message, order) in prepared {
            #expect(try harness.payment(message.paymentId).status.isTerminal)
            #expect(try harness.isPurged(message.paymentId))
            #expect(try harness.authCount(order) == (harness.payment(message.paymentId).errorCode == "gateway_30000" ? 0 : 1))
        }
        // No payment was read on its own (a per-message lock never ran): one batch read per transaction.
        #expect(run.perMessageLocks == 0)
        print("submit statements per batch of \(amounts.count): \(run.statements)")
        // Read, merchant, begin, COMMIT; end, COMMIT: independent of the batch size.
        #expect(run.statements <= 8)
    }

    /// The answers that do not end a payment (the gateway's unknown error: the attempt is left uncertain; a server
    /// error) are recorded set-based too: a batch of six costs the statements a batch of two does.
    @Test func unfinishedAnswersAreRecordedInAFewStatementsForAnyBatchSize() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        func run(_ amounts: [Int64]) throws -> (statements: Int64, outcomes: [String]) {
            let prepared = try amounts.map { try harness.preparedPayment(amount: $0) }
            let batch = prepared.map(\.message)
            let run = try Self.process(Self.makeStage(harness), batch, harness: harness)
            var outcomes: [String] = []
            for (result, message) in zip(run.results, batch) {
                let attempts = try harness.attempts(message.paymentId).map(\.state.rawValue).joined(separator: ",")
                outcomes.append("\(Self.shape(result, message)) \(try harness.payment(message.paymentId).status.rawValue) [\(attempts)]")
            }
            #expect(run.perMessageLocks == 0)
            return (run.statements, outcomes)
        }
        let two = try run([1099, 1097])
        let six = try run([1099, 1097, 1099, 1097, 1099, 1097])
        print("submit statements for unfinished answers: batch of 2: \(two.statements), batch of 6: \(six.statements); \(six.outcomes)")
        #expect(six.outcomes == Array(repeating: two.outcomes, count: 3).flatMap { $0 })
        #expect(two.outcomes[0] == "transient gateway_outcome_uncertain submitting [uncertain]")
        #expect(six.statements == two.statements)
    }

    /// The reconciler's round fails every payment past the payment deadline in one statement, audited by submit, and
    /// hands each to notification; a payment within the deadline is left alone.
    @Test func theDeadlineRoundFailsItsBatchInOneStatement() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let late = try (0..<3).map { _ in try harness.preparedPayment(amount: 1000, receivedSecondsAgo: 700).message }
        let recent = try harness.preparedPayment(amount: 1000).message
        let database = try harness.authorize.database()
        defer { database.close() }
        let before = try StatementCount.read(database)
        let handed = try harness.makeStage(deadline: 600).reconcile(on: database)
        let statements = try StatementCount.read(database).total - before.total - 1
        #expect(Set(handed.map(\.message.paymentId)) == Set(late.map(\.paymentId)))
        #expect(handed.allSatisfy { $0.stage == .notify })
        for message in late {
            let payment = try harness.payment(message.paymentId)
            #expect(payment.status == .failed)
            #expect(payment.errorCode == "deadline_exceeded")
            #expect(try harness.authorize.events(message.paymentId).last == "prepared→failed by submit")
            #expect(try harness.isPurged(message.paymentId))
        }
        #expect(try harness.payment(recent.paymentId).status == .prepared)
        // The claim, the batch read, the failures, COMMIT: whatever the number of payments (one failure each before).
        print("submit deadline round: \(statements) statements for \(late.count) payments")
        #expect(statements <= 4)
    }

    @Test func theOddMessagesOfAMixedBatchGoThroughThePerMessagePath() throws {
        let harness = try SubmitHarness()
        defer { harness.tearDown() }
        let stage = Self.makeStage(harness)
        let plain = try harness.preparedPayment(amount: 1000)
        let declined = try harness.preparedPayment(amount: 1051)
        let fieldError = try harness.preparedPayment(amount: 1091)
        let uncertain = try harness.preparedPayment(amount: 1099)
        let terminal = try harness.preparedPayment(amount: 1002)
        #expect(Self.shape(try harness.process(stage, terminal.message), terminal.message) == "handOff notify self")
        let missing = try harness.preparedPayment(amount: 1003)
        let database = try harness.authorize.database()
        defer { database.close() }
        try database.query("DELETE FROM gateway_requests WHERE payment_id = $1", [missing.message.paymentId])
        let duplicate = try harness.preparedPayment(amount: 1004)
        // Last, so that its AUTH is still within the reconciliation grace when the batch runs.
        let awaiting = try Integration.SubmitStageTests.crashedAfterSending(harness, amount: 1000, sent: false)
        let batch = [plain.message, duplicate.message, declined.message, terminal.message, awaiting.0, fieldError.message,
                     missing.message, duplicate.message, uncertain.message]
        let eventsBefore = try harness.authorize.events(terminal.message.paymentId)

        let results = try Self.process(stage, batch, harness: harness).results
        #expect(zip(results, batch).map { Self.shape($0, $1) } == [
            "handOff notify self", "handOff notify self", "handOff notify self", "handOff notify self",
            "transient awaiting_reconciliation", "handOff notify self", "handOff notify self",
            "transient awaiting_reconciliation", "transient gateway_outcome_uncertain",
        ])
        #expect(try harness.payment(plain.message.paymentId).status == .authorized)
        #expect(try harness.payment(declined.message.paymentId).status == .declined)
        #expect(try harness.payment(declined.message.paymentId).errorCode == "gateway_70000")
        #expect(try harness.payment(fieldError.message.paymentId).status == .failed)
        #expect(try harness.payment(fieldError.message.paymentId).errorCode == "gateway_30000")
        #expect(try harness.payment(uncertain.message.paymentId).status == .submitting)
        #expect(try harness.attempts(uncertain.message.paymentId).map(\.state) == [.uncertain])
        #expect(try harness.authorize.events(terminal.message.paymentId) == eventsBefore, "a finished payment is not touched")
        #expect(try harness.payment(awaiting.0.paymentId).status == .submitting)
        #expect(try harness.attempts(awaiting.0.paymentId).map(\.state) == [.sending])
        #expect(try harness.payment(missing.message.paymentId).status == .failed)
        #expect(try harness.payment(missing.message.paymentId).errorCode == "missing_gateway_request")
        #expect(try harness.attempts(missing.message.paymentId).isEmpty)
        // The repeated delivery neither sends a second AUTH nor adds a second attempt or transition.
        #expect(try harness.payment(duplicate.message.paymentId).status == .authorized)
        #expect(try harness.authCount(duplicate.orderReference) == 1)
        #expect(try harness.attempts(duplicate.message.paymentId).map(\.state) == [.completed])
        #expect(try harness.authorize.events(duplicate.message.paymentId).suffix(2) == ["prepared→submitting by submit", "submitting→authorized by submit"])
        for payment in [plain, declined, fieldError, duplicate, terminal, missing] {
            #expect(try harness.isPurged(payment.message.paymentId))
            #expect(try harness.authorize.events(payment.message.paymentId).filter { $0.hasPrefix("prepared→submitting") }.count <= 1)
        }
        #expect(try !harness.isPurged(uncertain.message.paymentId))
        #expect(try harness.authCount(plain.orderReference) == 1)
        #expect(try harness.authCount(fieldError.orderReference) == 0)
        #expect(try harness.authCount(awaiting.1) == 0)
    }
}
}
