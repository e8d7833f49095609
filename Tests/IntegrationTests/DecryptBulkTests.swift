import ApplePay
import Foundation
import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

/// The decrypt stage's set-based fast path (``DecryptStage/handleInBulk(_:transaction:)``) against the one-by-one
/// path it replaces for the common case: the same batches leave the same rows and give the same outcomes, plain jobs
/// are really settled in bulk, and every odd one is left to the one-by-one path.
extension Integration {
@Suite struct DecryptBulkTests {
    /// A batch of every kind the decrypt stage meets, for job ids starting with `prefix`, after `prior` (processed in
    /// an earlier batch). `plain` are the positions the bulk path must settle itself.
    struct Scenario {
        let prior: [DecryptInput]
        let batch: [DecryptInput]
        /// The throwing kinds (unknown merchant, idempotency conflict), in a batch of their own: they abandon the
        /// first pass of their batch, so the bulk work of that batch is rolled back and redone one by one.
        let throwing: [DecryptInput]
        let plain: Set<Int>
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
        let throwing: [DecryptInput] = [
            try input(harness.job("\(p)-d", token: harness.token())),
            try input(harness.job("\(p)-nobody", token: harness.token(), merchantId: "nobody")),
            try input(harness.job("\(p)-b", token: harness.token(amount: 2000), amount: 2000)),   // job id reused, other content
        ]
        return Scenario(prior: [try input(prior)], batch: batch, throwing: throwing, plain: [0, 1, 9])
    }

    static func jobId(_ input: DecryptInput) -> String {
        switch input {
        case .job(let job, _): job.jobId
        case .invalid(_, let jobId, _, _): jobId
        }
    }

    /// An outcome with the job id's prefix dropped, and checked to address the payment of its job.
    static func normalized(_ result: Result<StageOutcome, StageFailure>, job: String, prefix: String, on database: PostgresConnection) throws -> String {
        switch result {
        case .success(.handOff(let stage, let message)):
            let owner = try database.query("SELECT job_id FROM payments WHERE id = $1", [message.paymentId]).first?.decode("job_id", as: String.self)
            #expect(owner == message.jobId, "the hand-off addresses its own payment")
            return "handOff \(stage.rawValue) \(message.jobId.dropFirst(prefix.count))"
        case .success(let other): return "\(other)"
        case .failure(let failure): return "failure \(failure.code)"
        }
    }

    /// Runs the scenario through `stage` and returns the normalised outcomes and the rows of every job.
    static func run<S: TransactionalStageHandler>(
        _ stage: S, _ scenario: Scenario, prefix: String, harness: DecryptHarness
    ) throws -> (outcomes: [String], rows: [String: PaymentSnapshot]) where S.Message == DecryptInput {
        let database = try TestServices.database()
        defer { database.close() }
        #expect(stage.process(scenario.prior, database: database).allSatisfy { (try? $0.get()) != nil })
        var outcomes: [String] = []
        for batch in [scenario.batch, scenario.throwing] {
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

    @Test func theBulkPathLeavesTheSameRowsAndOutcomesAsOneByOne() throws {
        let harness = try DecryptHarness()
        let stage = harness.makeStage()
        let bulk = try Self.run(stage, try Self.scenario(harness, prefix: "bulk"), prefix: "bulk", harness: harness)
        let oneByOne = try Self.run(OneByOneStage(base: stage), try Self.scenario(harness, prefix: "one"), prefix: "one", harness: harness)

        #expect(bulk.outcomes == oneByOne.outcomes)
        #expect(bulk.outcomes == [
            "handOff authorize -a", "handOff authorize -b", "handOff authorize -a", "handOff notify -replay-in",
            "handOff notify -replay-across", "handOff notify -amount", "handOff authorize -prior", "handOff notify -invalid",
            "handOff notify -signature", "handOff authorize -c",
            "handOff authorize -d", "failure unknown_merchant", "failure idempotency_conflict",
        ])
        #expect(bulk.rows.keys.sorted() == oneByOne.rows.keys.sorted())
        #expect(bulk.rows.count == 10)
        for (job, row) in bulk.rows.sorted(by: { $0.key < $1.key }) {
            #expect(row == oneByOne.rows[job], "\(job)")
        }
        // The rows are what they should be, not merely equal.
        let plain = try #require(bulk.rows["-a"])
        #expect(plain.status == "decrypted" && plain.stage == "authorize" && plain.tokenClaimed && plain.cardHeld)
        #expect(plain.events == ["NULL→received decrypt decrypt - -", "received→decrypted authorize decrypt - -"])
        #expect(plain.card?.decrypted?.applicationPrimaryAccountNumber == "4111111111111111")
        #expect(plain.card?.billing?["addressLines"] == "1 Main St\nFlat 2")
        #expect(plain.notifyURL == "https://merchant.example/hooks/paypipe")
        #expect(plain.metadata == #"{"cart": "c-1", "channel": "app", "quote\"key": "back\\slash é"}"#)
        #expect(bulk.rows["-replay-in"]?.errorCode == "token_replayed")
        #expect(bulk.rows["-replay-across"]?.errorCode == "token_replayed")
        #expect(bulk.rows["-amount"]?.errorCode == "amount_mismatch")
        #expect(bulk.rows["-invalid"]?.errorCode == "invalid_job")
        #expect(bulk.rows["-signature"]?.errorCode == "signature_invalid")
        #expect(bulk.rows["-replay-in"]?.cardHeld == false)
    }

    @Test func bulkSettlesThePlainJobsAndLeavesEveryOddOneToTheOneByOnePath() throws {
        let harness = try DecryptHarness()
        let stage = harness.makeStage()
        let scenario = try Self.scenario(harness, prefix: "mixed")
        let database = try TestServices.database()
        defer { database.close() }
        _ = stage.process(scenario.prior, database: database)

        struct RollBack: Error {}
        var settled: [StageOutcome?] = []
        #expect(throws: RollBack.self) {
            try database.transaction { transaction in
                settled = try stage.handleInBulk(scenario.batch, transaction: transaction)
                throw RollBack()
            }
        }
        #expect(Set(settled.indices.filter { settled[$0] != nil }) == scenario.plain)
        for index in scenario.plain {
            guard case .handOff(.authorize, let message)? = settled[index] else {
                Issue.record("item \(index) is not a hand-off to authorize: \(String(describing: settled[index]))")
                continue
            }
            #expect(message.jobId == Self.jobId(scenario.batch[index]))
        }

        // The whole batch, bulk first then the rest one by one in the same transaction.
        let results = stage.process(scenario.batch, database: database)
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        let count = try database.query("SELECT count(*) AS n FROM payments WHERE job_id LIKE 'mixed-%'")[0].decode("n", as: Int64.self)
        #expect(count == 9, "prior, a, b, replay-in, replay-across, amount, invalid, signature, c")
        #expect(try harness.outcome("mixed-a")?.status == "decrypted")
        #expect(try harness.outcome("mixed-replay-in")?.code == "token_replayed")
        #expect(try harness.outcome("mixed-c")?.status == "decrypted")
        // The duplicate of job a got a's payment back.
        guard case .success(.handOff(.authorize, let first)) = results[0], case .success(.handOff(.authorize, let duplicate)) = results[2] else {
            Issue.record("a and its duplicate are not both handed to authorize")
            return
        }
        #expect(first == duplicate)
    }

    @Test func theCardDataIsSealedForItsPaymentAndVerifiedAtItsFirstReceivedTime() throws {
        let harness = try DecryptHarness()
        let stage = harness.makeStage()
        let database = try TestServices.database()
        defer { database.close() }
        let results = stage.process([try Self.input(harness.job("sealed-1", token: harness.token()))], database: database)
        guard case .success(.handOff(.authorize, let message))? = results.first else {
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
