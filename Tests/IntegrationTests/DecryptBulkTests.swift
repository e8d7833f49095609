import ApplePay
import Foundation
import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Synchronization
import Testing

/// The decrypt stage's one path (``DecryptStage/handle(_:transaction:)``) on a batch of every kind it meets, with real
/// tokens and a real database: the outcomes, and the rows each kind leaves. The decision table itself is
/// ``DecryptDecisionTests`` (no services).
extension Integration {
@Suite struct DecryptBulkTests {
    /// A batch of every kind the decrypt stage meets, for job ids starting with `prefix`, after `prior` (processed in
    /// an earlier batch).
    struct Scenario {
        let prior: [DecryptInput]
        let batch: [DecryptInput]
        /// The kinds that fail as messages (unknown merchant, idempotency conflict), with a plain one.
        let failing: [DecryptInput]
    }

    static func input(_ body: [UInt8]) throws -> DecryptInput {
        .job(try PaymentJob.decode(body))
    }

    static func scenario(_ harness: DecryptHarness, prefix p: String) throws -> Scenario {
        let shared = try harness.token()
        let priorToken = try harness.token(pan: "5500005555555559")
        let prior = try harness.job("\(p)-prior", token: priorToken)
        let rich = try SandboxEnvironment.jobBody("\(p)-a", token: shared, extra: [
            "metadata": ["cart": "c-1", "channel": "app", "quote\"key": "back\\slash é"],
            "notifyUrl": "https://merchant.example/hooks/paypipe",
            "billingContact": ["givenName": "Ada", "familyName": "Lovelace", "addressLines": ["1 Main St", "Flat 2"]],
        ])
        let batch: [DecryptInput] = [
            try input(rich),                                                                       // 0 plain
            try input(harness.job("\(p)-b", token: harness.token(pan: "4000056655665556"))),      // 1 plain
            try input(rich),                                                                       // 2 duplicate in the batch
            try input(harness.job("\(p)-replay-in", token: shared)),                               // 3 token replayed inside the batch
            try input(harness.job("\(p)-replay-across", token: priorToken)),                       // 4 token of an earlier batch
            try input(harness.job("\(p)-amount", token: harness.token(amount: 1000))),            // 5 amount mismatch
            try input(prior),                                                                      // 6 already-decrypted redelivery
            .invalid(merchantId: SandboxEnvironment.merchantId, jobId: "\(p)-invalid", contentHash: Array("h-\(p)".utf8),
                     reason: "amount.value must be an integer number of minor units"),            // 7 invalid job
            try input(harness.job("\(p)-signature", token: harness.token { TokenDefect.corruptSignature.apply(to: &$0, sandbox: harness.sandbox) })),
            try input(harness.job("\(p)-c", token: harness.token(amount: 500, currencyNumeric: "392"), amount: 500, currency: "JPY")),  // 9 plain
        ]
        let failing: [DecryptInput] = [
            try input(harness.job("\(p)-d", token: harness.token())),
            try input(harness.job("\(p)-nobody", token: harness.token(), merchantId: "nobody")),
            try input(harness.job("\(p)-b", token: harness.token(amount: 2000), amount: 2000)),   // job id reused, other content
        ]
        return Scenario(prior: [try input(prior)], batch: batch, failing: failing)
    }

    static func jobId(_ input: DecryptInput) -> String { input.key.jobId }

    /// An outcome with the job id's prefix dropped, and checked to address the payment of its job.
    static func normalized(_ result: Result<StageOutcome, StageFailure>, job: String, prefix: String, on database: PostgresConnection) throws -> String {
        switch result {
        case .success(.handOff(let handOff)):
            guard let message = handOff.message else { return "handOff \(handOff.target) of no stage message" }
            let owner = try database.query("SELECT job_id FROM payments WHERE id = $1", [message.paymentId]).first?.decode("job_id", as: String.self)
            #expect(owner == message.jobId, "the hand-off addresses its own payment")
            return "handOff \(handOff.target) \(message.jobId.dropFirst(prefix.count))"
        case .success(let other): return "\(other)"
        case .failure(let failure): return "failure \(failure.code)"
        }
    }

    /// Runs the scenario through `stage` and returns the normalised outcomes and the rows of every job.
    static func run(_ stage: DecryptStage, _ scenario: Scenario, prefix: String, harness: DecryptHarness) throws
        -> (outcomes: [String], rows: [String: PaymentSnapshot]) {
        let database = try TestServices.database()
        defer { database.close() }
        #expect(stage.process(scenario.prior, database: database).allSatisfy { (try? $0.get()) != nil })
        var outcomes: [String] = []
        for batch in [scenario.batch, scenario.failing] {
            for (input, result) in zip(batch, stage.process(batch, database: database)) {
                outcomes.append(try normalized(result, job: jobId(input), prefix: prefix, on: database))
            }
        }
        var rows: [String: PaymentSnapshot] = [:]
        for row in try database.query("SELECT id, job_id FROM payments WHERE job_id LIKE $1", [prefix + "-%"]) {
            let id = try row.decode("id", as: UUID.self)
            rows[String(try row.decode("job_id", as: String.self).dropFirst(prefix.count))] = try PaymentSnapshot.load(id, vault: harness.vault, on: database)
        }
        return (outcomes, rows)
    }

    @Test func aMixedBatchLeavesTheRowsOfEachKind() throws {
        let harness = try DecryptHarness()
        let run = try Self.run(harness.makeStage(), try Self.scenario(harness, prefix: "mixed"), prefix: "mixed", harness: harness)

        #expect(run.outcomes == [
            "handOff authorize -a", "handOff authorize -b", "handOff authorize -a", "handOff notify -replay-in",
            "handOff notify -replay-across", "handOff notify -amount", "handOff authorize -prior", "handOff notify -invalid",
            "handOff notify -signature", "handOff authorize -c",
            "handOff authorize -d", "failure unknown_merchant", "failure idempotency_conflict",
        ])
        #expect(run.rows.count == 10, "prior, a, b, replay-in, replay-across, amount, invalid, signature, c, d")
        let plain = try #require(run.rows["-a"])
        #expect(plain.status == "decrypted" && plain.stage == "authorize" && plain.tokenClaimed && plain.cardHeld)
        #expect(plain.events == ["NULL→received decrypt decrypt - -", "received→decrypted authorize decrypt - -"], "the duplicate wrote nothing")
        #expect(plain.card?.decrypted?.applicationPrimaryAccountNumber == "4111111111111111")
        #expect(plain.card?.billing?["addressLines"] == "1 Main St\nFlat 2")
        #expect(plain.notifyURL == "https://merchant.example/hooks/paypipe")
        #expect(plain.metadata == #"{"cart": "c-1", "channel": "app", "quote\"key": "back\\slash é"}"#)
        #expect(run.rows["-prior"]?.events.count == 2, "the redelivery of an advanced payment wrote nothing")
        #expect(run.rows["-b"]?.amountMinor == 1099, "the reused job id left the first payment untouched")
        for (job, code) in [("-replay-in", "token_replayed"), ("-replay-across", "token_replayed"), ("-amount", "amount_mismatch"),
                            ("-invalid", "invalid_job"), ("-signature", "signature_invalid")] {
            let row = try #require(run.rows[job], "\(job)")
            #expect(row.status == "failed" && row.stage == "notify" && row.errorCode == code, "\(job)")
            #expect(row.events.count == 2 && row.events[0] == "NULL→received decrypt decrypt - -", "\(job)")
            #expect(row.events[1].hasPrefix("received→failed notify pipeline \(code) "), "\(job): \(row.events)")
            #expect(!row.tokenClaimed && !row.cardHeld, "\(job)")
        }
        #expect(run.rows["-amount"]?.amountMinor == 1099 && run.rows["-amount"]?.currency == "GBP", "a failed job keeps its fields")
        #expect(run.rows["-invalid"]?.amountMinor == nil, "an invalid job has only its key")
        let database = try TestServices.database()
        defer { database.close() }
        let clocks = try database.query(
            "SELECT count(DISTINCT first_received_at) AS n FROM payments WHERE job_id = ANY($1::text[])",
            [PostgresArray(["a", "b", "replay-in", "replay-across", "amount", "invalid", "signature", "c"].map { "mixed-\($0)" })])
        #expect(try clocks[0].decode("n", as: Int64.self) == 1, "one clock for the batch's new payments, failed ones included")
    }

    /// A plain batch costs the same four prepared statements whatever its size, as `pg_prepared_statements` counts them:
    /// the read, the merchant's revalidation (the harness's cache has no TTL), the write and `COMMIT` (`BEGIN` is a simple
    /// query, not counted).
    @Test func aPlainBatchCostsTheSameFewStatementsWhateverItsSize() throws {
        let harness = try DecryptHarness()
        let stage = harness.makeStage()
        let database = try TestServices.database()
        defer { database.close() }
        for size in [1, 12] {
            let batch = try (0..<size).map { try Self.input(harness.job("count-\(size)-\($0)", token: harness.token(pan: "41111111111111\(10 + $0)"))) }
            let run = try StatementCounter.counting(on: database) { stage.process(batch, database: database) }
            #expect(run.value.allSatisfy { if case .success(.handOff(let handOff)) = $0 { handOff.stage == .authorize } else { false } })
            print("decrypt statements per plain batch of \(size): \(run.statements)")
            #expect(run.statements == 4, "batch of \(size)")
        }
    }

    /// The halving fallback on the real stage: a merchant deleted while the worker's cache still holds it makes the
    /// batch's insert fail (foreign key) as a whole; the same path runs again on halves and only that job fails, as a
    /// retryable message failure, while the others are decrypted in the same commit. Each token is decrypted once for
    /// all those runs (`paypipe_tokens_decrypted_total`, counted as the stage decrypts: 4, not the 10 runs of a job).
    @Test func aWriteThatFailsForOneJobFailsThatJobAloneAfterHalving() throws {
        let harness = try DecryptHarness()
        let database = try TestServices.database()
        defer { database.close() }
        var gone = harness.sandbox.merchantDocument()
        gone.id = "gone"
        try MerchantStore(vault: harness.vault).apply(gone, baseDirectory: URL(fileURLWithPath: harness.sandbox.directory), deployment: .sandbox, on: database)
        let directory = MerchantDirectory(store: MerchantStore(vault: harness.vault), ttl: 3600)
        let stage = DecryptStage(
            directory: directory, cardData: CardDataStore(vault: harness.vault),
            decryptor: ApplePayDecryptor(configuration: ApplePayVerifierConfiguration(trustRoot: harness.sandbox.pki.trustRoot)))
        let registry = MetricsRegistry()
        stage.attach(metrics: registry)
        // Warm the cache with the merchant, then delete it behind the worker's back.
        #expect(try directory.entry("gone", on: database) != nil)
        try database.query("DELETE FROM merchants WHERE id = 'gone'")

        let batch = try [
            Self.input(harness.job("halve-1", token: harness.token(pan: "4000000000000010"))),
            Self.input(harness.job("halve-2", token: harness.token(pan: "4000000000000028"))),
            Self.input(harness.job("halve-gone", token: harness.token(pan: "4000000000000036"), merchantId: "gone")),
            Self.input(harness.job("halve-3", token: harness.token(pan: "4000000000000044"))),
        ]
        let results = stage.process(batch, database: database)
        #expect(results.map { result -> String in
            switch result {
            case .success(.handOff(let handOff)): "\(handOff.target) \(handOff.message?.jobId ?? "?")"
            case .success(let other): "\(other)"
            case .failure(let failure): "failure \(failure.code)"
            }
        } == ["authorize halve-1", "authorize halve-2", "failure database_error", "authorize halve-3"])
        #expect(try harness.outcome("halve-1")?.status == "decrypted" && harness.outcome("halve-3")?.status == "decrypted")
        #expect(try harness.outcome("halve-gone") == nil)
        let decrypted = registry.render().split(separator: "\n")
            .filter { $0.hasPrefix(KeyUsageCounter.metric + "{") }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .reduce(0, +)
        #expect(decrypted == Double(batch.count), "each token of the batch is verified and decrypted once")
    }

    /// One clock for a batch: a job that fails its token checks is created with the same `first_received_at` as the
    /// plain job beside it (not the transaction's time for one and Swift's for the other).
    @Test func theBatchsNewPaymentsShareOneClock() throws {
        let harness = try DecryptHarness()
        let database = try TestServices.database()
        defer { database.close() }
        let batch: [DecryptInput] = [
            try Self.input(harness.job("clock-a", token: harness.token())),
            try Self.input(harness.job("clock-amount", token: harness.token(amount: 1000, pan: "4000056655665556"))),
        ]
        #expect(harness.makeStage().process(batch, database: database).allSatisfy { (try? $0.get()) != nil })
        let clocks = try database.query("SELECT count(DISTINCT first_received_at) AS n FROM payments WHERE job_id LIKE 'clock-%'")
        #expect(try clocks[0].decode("n", as: Int64.self) == 1, "one clock for the batch's new payments, failed ones included")
    }

    /// Two lanes with the same job: the second one's insert waits for the first one's commit and comes up short; the
    /// batch is decided again on a fresh read and hands off the first one's payment (not a retry, not a second payment).
    @Test func aJobInsertedConcurrentlyIsDecidedAgainOnAFreshRead() throws {
        let harness = try DecryptHarness()
        let stage = harness.makeStage()
        let input = try Self.input(harness.job("race-1", token: harness.token()))
        let first = try TestServices.database()
        defer { first.close() }
        try first.simpleQuery("BEGIN")
        let firstResults = try stage.handle([input], transaction: first)
        let secondResults = Mutex<[Result<StageOutcome, StageFailure>]?>(nil)
        let thread = Thread {
            guard let second = try? TestServices.database() else {
                secondResults.withLock { $0 = [] }
                return
            }
            let results = stage.process([input], database: second)
            secondResults.withLock { $0 = results }
            second.close()
        }
        thread.start()
        try TestServices.eventually("the second insert waits for the first transaction") {
            try secondResults.withLock { $0 != nil }
                || !first.query("SELECT 1 FROM pg_locks WHERE NOT granted").isEmpty
        }
        #expect(secondResults.withLock { $0 } == nil, "the second lane waited")
        try first.simpleQuery("COMMIT")
        try TestServices.eventually("the second lane finished") { secondResults.withLock { $0 != nil } }
        guard case .success(.handOff(let handOff))? = firstResults.first, handOff.stage == .authorize, let message = handOff.message else {
            Issue.record("first: \(firstResults)")
            return
        }
        #expect(secondResults.withLock { $0 } == [.success(.handOff(to: .authorize, message))])
        let verification = try TestServices.database()
        defer { verification.close() }
        #expect(try verification.query("SELECT id FROM payments WHERE job_id = 'race-1'").count == 1)
        #expect(try verification.query("SELECT id FROM payment_events WHERE payment_id = $1", [message.paymentId]).count == 2)
    }

    @Test func theCardDataIsSealedForItsPaymentAndVerifiedAtItsFirstReceivedTime() throws {
        let harness = try DecryptHarness()
        let stage = harness.makeStage()
        let database = try TestServices.database()
        defer { database.close() }
        let results = stage.process([try Self.input(harness.job("sealed-1", token: harness.token()))], database: database)
        guard case .success(.handOff(let handOff))? = results.first, handOff.stage == .authorize, let message = handOff.message else {
            Issue.record("not handed off: \(results)")
            return
        }
        let row = try database.query(
            "SELECT c.key_id, c.nonce, c.ciphertext, p.first_received_at, p.created_at FROM card_data c JOIN payments p ON p.id = c.payment_id WHERE p.id = $1",
            [message.paymentId])[0]
        // Bound to its payment: under another payment's id (AAD) it does not open.
        let box = DataVault.SealedBox(keyId: try row.decode("key_id", as: String.self), nonce: try row.decode("nonce", as: [UInt8].self),
                                      ciphertext: try row.decode("ciphertext", as: [UInt8].self))
        #expect(throws: DataVault.VaultError.authenticationFailed) {
            try harness.vault.open(box, aad: Array(UUID().uuidString.lowercased().utf8))
        }
        #expect(try CardDataStore(vault: harness.vault).load(message.paymentId, on: database)?.decrypted?.transactionAmount == 1099)
        let firstReceived = try row.decode("first_received_at", as: Date.self)
        let created = try row.decode("created_at", as: Date.self)
        #expect(abs(firstReceived.timeIntervalSince(created)) < 5, "first_received_at is the batch's clock, not a stale or future time")
    }
}
}
