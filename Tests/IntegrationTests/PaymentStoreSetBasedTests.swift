import Foundation
import PaymentStages
import Pipeline
import Postgres
import Testing

/// The decrypt and authorize stages' statements of ``PaymentStore`` against the real PostgreSQL, one test each: what
/// they write, what they skip, and that every transition they bind is the state machine's.
extension Integration {
@Suite struct PaymentStoreSetBasedTests {
    static let store = PaymentStore()
    static let receivedAt = Date(timeIntervalSince1970: 1_767_225_600.25)

    static func database() throws -> PostgresConnection {
        try TestServices.resetDatabase()
        let database = try TestServices.database()
        try database.query("INSERT INTO merchants (id) VALUES ('m1')")
        return database
    }

    static func job(_ jobId: String) -> PaymentJob {
        try! PaymentJob.decode(Array("""
            {"jobId":"\(jobId)","merchantId":"m1","orderReference":"order-\(jobId)","amount":{"value":1099,"currency":"GBP"},
             "notifyUrl":"https://shop.example/hook","metadata":{"cart":"42"},"applePayToken":{"paymentData":{"version":"EC_v1"}}}
            """.utf8))
    }

    static func new(_ jobId: String, _ settled: Decrypt.Settled<DataVault.SealedBox>, invalid: Bool = false) -> Decrypt.NewPayment<DataVault.SealedBox> {
        let job = job(jobId)
        return Decrypt.NewPayment(id: UUID(), key: Decrypt.JobKey(merchantId: "m1", jobId: jobId), jobHash: job.contentHash,
                                  job: invalid ? nil : job, settled: settled)
    }

    static func sealed(_ tag: UInt8) -> DataVault.SealedBox { DataVault.SealedBox(keyId: "k1", nonce: [tag], ciphertext: [tag, tag]) }

    static func events(_ id: UUID, on database: PostgresConnection) throws -> [String] {
        try database.query("SELECT from_status, to_status, stage, actor, error_code, detail FROM payment_events WHERE payment_id = $1 ORDER BY id", [id])
            .map { row in
                [try row.decode("from_status", as: String?.self) ?? "NULL", try row.decode("to_status", as: String.self),
                 try row.decode("stage", as: String.self), try row.decode("actor", as: String.self),
                 try row.decode("error_code", as: String?.self) ?? "-", try row.decode("detail", as: String?.self) ?? "-"].joined(separator: " ")
            }
    }

    @Test func insertNewWritesDecryptedAndFailedPaymentsWithTheirEventsInOneStatement() throws {
        let database = try Self.database()
        defer { database.close() }
        let decrypted = Self.new("a", .decrypted(Decrypt.Verified(transactionId: "tx-a", payload: Self.sealed(1))))
        let failed = Self.new("b", .failed(Rejection(code: "signature_invalid", reason: "bad signature")))
        let invalid = Self.new("c", .failed(Rejection(code: "invalid_job", reason: "amount")), invalid: true)
        let inserted = try database.transaction { try Self.store.insertNew([decrypted, failed, invalid], receivedAt: Self.receivedAt, on: $0) }
        #expect(inserted == [decrypted.id, failed.id, invalid.id])

        let rows = try database.query(
            """
            SELECT p.id, p.status, p.stage, p.error_code, p.error_message, p.token_transaction_id, p.amount_minor, p.order_reference,
                   p.metadata::text AS metadata, p.first_received_at, c.ciphertext
            FROM payments p LEFT JOIN card_data c ON c.payment_id = p.id ORDER BY p.job_id
            """)
        func text(_ row: PostgresRow, _ column: String) throws -> String { try row.decode(column, as: String?.self) ?? "-" }
        #expect(try rows.map { try [text($0, "status"), text($0, "stage"), text($0, "error_code"), text($0, "token_transaction_id"),
                                     text($0, "order_reference"), text($0, "metadata")].joined(separator: " ") } == [
            #"decrypted authorize - tx-a order-a {"cart": "42"}"#,
            #"failed notify signature_invalid - order-b {"cart": "42"}"#,
            "failed notify invalid_job - - {}",
        ])
        #expect(try rows[0].decode("ciphertext", as: [UInt8]?.self) == [1, 1])
        #expect(try rows[1].decode("ciphertext", as: [UInt8]?.self) == nil && rows[2].decode("ciphertext", as: [UInt8]?.self) == nil)
        #expect(try rows.allSatisfy { try $0.decode("first_received_at", as: Date.self) == Self.receivedAt }, "one clock")
        #expect(try rows[1].decode("error_message", as: String?.self) == "bad signature")
        #expect(try Self.events(decrypted.id, on: database) == ["NULL received decrypt decrypt - -", "received decrypted authorize decrypt - -"])
        #expect(try Self.events(failed.id, on: database) == [
            "NULL received decrypt decrypt - -", "received failed notify pipeline signature_invalid bad signature",
        ])

        // A key or a transactionId another payment holds: the row is skipped, not an error.
        let again = Self.new("a", .decrypted(Decrypt.Verified(transactionId: "tx-other", payload: Self.sealed(2))))
        let replay = Self.new("d", .decrypted(Decrypt.Verified(transactionId: "tx-a", payload: Self.sealed(3))))
        let fresh = Self.new("e", .decrypted(Decrypt.Verified(transactionId: "tx-e", payload: Self.sealed(4))))
        #expect(try Self.store.insertNew([again, replay, fresh], receivedAt: Self.receivedAt, on: database) == [fresh.id])
        #expect(try Self.events(again.id, on: database).isEmpty && Self.events(replay.id, on: database).isEmpty)
    }

    /// Each payment keeps its job's trace context (migration 15), written by the same insert; a re-drive of the row
    /// (the reconciler's claim, a deferred completion's snapshot, an operator's resolve) hands it on.
    @Test func insertNewKeepsTheJobsTraceContextAndReDrivesCarryIt() throws {
        let database = try Self.database()
        defer { database.close() }
        let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        var traced = Self.new("t", .decrypted(Decrypt.Verified(transactionId: "tx-t", payload: Self.sealed(1))))
        var job = try #require(traced.job)
        (job.traceparent, job.tracestate) = (traceparent, "vendor=abc")
        traced = Decrypt.NewPayment(id: traced.id, key: traced.key, jobHash: traced.jobHash, job: job, settled: traced.settled)
        let untraced = Self.new("u", .decrypted(Decrypt.Verified(transactionId: "tx-u", payload: Self.sealed(2))))
        // An invalid job has no job, only its delivery's context.
        let invalid = Self.new("i", .failed(Rejection(code: "invalid_job", reason: "no amount")), invalid: true)
        let invalidTraced = Decrypt.NewPayment(id: invalid.id, key: invalid.key, jobHash: invalid.jobHash, job: nil, settled: invalid.settled,
                                               trace: (traceparent, nil))
        _ = try database.transaction { try Self.store.insertNew([traced, untraced, invalidTraced], receivedAt: Self.receivedAt, on: $0) }
        #expect(try Self.store.tracedMessage(invalid.id, on: database)?.traceparent == traceparent, "an invalid job's failed payment keeps it")
        try database.query("UPDATE payments SET stage = 'authorize', updated_at = now() - interval '10 minutes'")
        let claimed = try Reconciler(stage: .authorize, stuckAfterSeconds: 300).claimStuck(on: database)
        let byId = Dictionary(uniqueKeysWithValues: claimed.map { ($0.paymentId, $0) })
        #expect(byId[traced.id]?.traceparent == traceparent)
        #expect(byId[traced.id]?.tracestate == "vendor=abc")
        #expect(byId[untraced.id].map { $0.traceparent == nil && $0.tracestate == nil } == true, "a payment without a trace keeps none")
        let handOff = HandOffMessage(.authorize, try #require(byId[traced.id]))
        #expect(handOff.trace?.traceparent == traceparent && handOff.trace?.state == "vendor=abc", "the re-drive is sent in the payment's trace")
        #expect(HandOffMessage(.authorize, try #require(byId[untraced.id])).trace == nil)
        #expect(try Self.store.tracedMessage(traced.id, on: database)?.traceparent == traceparent)
        let snapshot = try #require(try database.transaction { try Self.store.deferredSnapshots([traced.id], on: $0) }[traced.id])
        #expect(snapshot.message(paymentId: traced.id).traceparent == traceparent)
        #expect(snapshot.completed(amount: 1, at: Self.receivedAt).traceparent == traceparent)
    }

    /// A storing job's usage and an MIT's credential and reason reach the payment row, so authorize and submit see
    /// them; a refused MIT keeps its reason but links no credential (its id may be unknown or another merchant's).
    @Test func insertNewRecordsTheStoredCredentialMembersOfTheJob() throws {
        let database = try Self.database()
        defer { database.close() }
        func job(_ jobId: String, _ members: String) -> PaymentJob {
            try! PaymentJob.decode(Array("""
                {"jobId":"\(jobId)","merchantId":"m1","orderReference":"order-\(jobId)","amount":{"value":1099,"currency":"GBP"},\(members)}
                """.utf8))
        }
        func new(_ job: PaymentJob, _ settled: Decrypt.Settled<DataVault.SealedBox>) -> Decrypt.NewPayment<DataVault.SealedBox> {
            Decrypt.NewPayment(id: UUID(), key: Decrypt.JobKey(merchantId: "m1", jobId: job.jobId), jobHash: job.contentHash, job: job, settled: settled)
        }
        let parent = Self.new("parent", .decrypted(Decrypt.Verified(transactionId: "tx-parent", payload: Self.sealed(1))))
        _ = try Self.store.insertNew([parent], receivedAt: Self.receivedAt, on: database)
        let credentialId = "cred_" + String(repeating: "ab", count: 12)
        try database.query(
            """
            INSERT INTO credentials (id, merchant_id, payment_id, connector, usage, token_type, key_id, nonce, ciphertext)
            VALUES ($1, 'm1', $2, 'trustpayments', 'recurring', 'merchant', 'k1', '\\x01', '\\x0102')
            """, [credentialId, parent.id])
        let mit = #""initiator":"merchant","credentialId":"\#(credentialId)","mitReason":"recurring""#
        let storing = new(job("cit", #""applePayToken":{"paymentData":{"version":"EC_v1"}},"storeCredential":{"usage":"installment"}"#),
                          .decrypted(Decrypt.Verified(transactionId: "tx-cit", payload: Self.sealed(2))))
        let charged = new(job("mit", mit), .decrypted(Decrypt.Verified(transactionId: "mit-1", payload: Self.sealed(3))))
        let refused = new(job("refused", #""initiator":"merchant","credentialId":"cred_000000000000000000000000","mitReason":"delayed_charge""#),
                          .failed(Rejection(code: "credential_unknown", reason: "no such credential")))
        #expect(try Self.store.insertNew([storing, charged, refused], receivedAt: Self.receivedAt, on: database).count == 3)
        let rows = try database.query(
            "SELECT job_id, store_credential, credential_id, mit_reason FROM payments WHERE job_id <> 'parent' ORDER BY job_id")
        #expect(try rows.map { row in
            try ["job_id", "store_credential", "credential_id", "mit_reason"].map { try row.decode($0, as: String?.self) ?? "-" }.joined(separator: " ")
        } == ["cit installment - -", "mit - \(credentialId) recurring", "refused - - delayed_charge"])
    }

    @Test func decryptRowsFindsThePaymentsByKeyAndTheClaimedTransactionIds() throws {
        let database = try Self.database()
        defer { database.close() }
        let a = Self.new("a", .decrypted(Decrypt.Verified(transactionId: "tx-a", payload: Self.sealed(1))))
        let b = Self.new("b", .decrypted(Decrypt.Verified(transactionId: "tx-b", payload: Self.sealed(2))))
        _ = try Self.store.insertNew([a, b], receivedAt: Self.receivedAt, on: database)
        let read = try Self.store.decryptRows(
            keys: [a.key, Decrypt.JobKey(merchantId: "m1", jobId: "new")], transactionIds: ["tx-b", "tx-new"], on: database)
        #expect(read.payments.keys.map(\.jobId) == ["a"])
        #expect(read.payments[a.key] == Decrypt.Existing(id: a.id, key: a.key, jobHash: a.jobHash, status: .decrypted, firstReceivedAt: Self.receivedAt))
        #expect(read.claimed == ["tx-b"], "of the ids asked for, the one another payment holds")
        let both = try Self.store.decryptRows(keys: [a.key], transactionIds: ["tx-a", "tx-b"], on: database)
        #expect(both.claimed == ["tx-a", "tx-b"] && both.payments.count == 1, "a found payment's own id counts too")
    }

    @Test func failEndsOnlyPaymentsStillInTheirFromStatusAndSubmittingOnesGoToReview() throws {
        let database = try Self.database()
        defer { database.close() }
        let payments = ["a", "b", "c"].map { Self.new($0, .decrypted(Decrypt.Verified(transactionId: "tx-\($0)", payload: Self.sealed(1)))) }
        _ = try Self.store.insertNew(payments, receivedAt: Self.receivedAt, on: database)
        try database.query("UPDATE payments SET status = 'submitting', stage = 'submit' WHERE id = $1", [payments[2].id])
        let rejection = Rejection(code: "invalid_currency", reason: "EUR")
        let failing = try [
            PaymentStore.Failing(paymentId: payments[0].id, from: .decrypted, rejection: rejection),
            PaymentStore.Failing(paymentId: payments[1].id, from: .prepared, rejection: rejection),   // stale: it is decrypted
            PaymentStore.Failing(paymentId: payments[2].id, from: .submitting, rejection: rejection),
        ]
        #expect(failing.map(\.checked.to) == [.failed, .failed, .needsReview])
        #expect(try Self.store.fail(failing, on: database) == [payments[0].id, payments[2].id])
        #expect(try Self.events(payments[0].id, on: database).last == "decrypted failed notify pipeline invalid_currency EUR")
        #expect(try Self.events(payments[2].id, on: database).last == "submitting needs_review notify pipeline invalid_currency EUR")
        #expect(try database.query("SELECT ciphertext FROM card_data WHERE payment_id = $1", [payments[0].id])[0]
            .decode("ciphertext", as: [UInt8]?.self) == nil, "the terminal purge shredded the card data")
        // A transition the state machine forbids cannot even be built.
        #expect(throws: PaymentStateMachine.IllegalTransition.self) {
            try PaymentStore.Failing(paymentId: payments[0].id, from: .declined, rejection: rejection)
        }
    }

    @Test func decryptReceivedSettlesOnlyPaymentsStillReceived() throws {
        let database = try Self.database()
        defer { database.close() }
        let payments = ["a", "b"].map { Self.new($0, .decrypted(Decrypt.Verified(transactionId: "tx-\($0)", payload: Self.sealed(1)))) }
        _ = try Self.store.insertNew(payments, receivedAt: Self.receivedAt, on: database)
        try database.query("UPDATE payments SET status = 'received', stage = 'decrypt', token_transaction_id = NULL WHERE id = $1", [payments[0].id])
        let settled = try Self.store.decryptReceived(
            payments.map { ($0.id, $0.job, Decrypt.Verified(transactionId: "again-\($0.key.jobId)", payload: Self.sealed(9))) }, on: database)
        #expect(settled == [payments[0].id])
        let row = try database.query("SELECT status, token_transaction_id FROM payments WHERE id = $1", [payments[0].id])[0]
        #expect(try row.decode("status", as: String.self) == "decrypted" && row.decode("token_transaction_id", as: String?.self) == "again-a")
        #expect(try database.query("SELECT ciphertext FROM card_data WHERE payment_id = $1", [payments[0].id])[0]
            .decode("ciphertext", as: [UInt8]?.self) == [9, 9])
        #expect(try Self.events(payments[0].id, on: database).last == "received decrypted authorize decrypt - -")
        #expect(try Self.events(payments[1].id, on: database).count == 2, "the decrypted one is untouched")
    }
}
}
