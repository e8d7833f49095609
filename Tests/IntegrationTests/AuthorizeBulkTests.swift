import Foundation
import PaymentStages
import Pipeline
import Postgres
import Testing

/// The authorize stage's one path (``AuthorizeStage/handle(_:transaction:)``) on a batch of every kind it meets, against
/// a real database: the outcomes, and the rows (statuses, events, stored requests, card data) each kind leaves. The
/// decision table itself is ``AuthorizeDecisionTests`` (no services).
extension Integration {
@Suite struct AuthorizeBulkTests {
    /// A batch of every kind the authorize stage meets, after `prior` (processed in an earlier batch); `failing` holds
    /// the kinds that fail as messages (still `received`, unknown payment) with a plain one; `labels` name every message.
    struct Scenario {
        let prior: [StageMessage]
        let batch: [StageMessage]
        let failing: [StageMessage]
        let labels: [UUID: String]
    }

    static func scenario(_ harness: AuthorizeHarness) throws -> Scenario {
        var labels: [UUID: String] = [:]
        func payment(_ label: String, merchant: String = "authz-md", currency: String = "GBP",
                     data: StoredPaymentData? = AuthorizeStageTests.stored()) throws -> StageMessage {
            let message = try harness.insertPayment(merchantId: merchant, amount: 2000, currency: currency, orderReference: "ORDER-\(label)", data: data)
            labels[message.paymentId] = label
            return message
        }
        let plain = try payment("plain")
        let prepared = try payment("prepared")
        let received = try payment("received")
        let database = try harness.database()
        defer { database.close() }
        try database.query("UPDATE payments SET status = 'received', stage = 'decrypt' WHERE id = $1", [received.paymentId])
        let unknown = StageMessage(paymentId: UUID(), merchantId: "authz-md", jobId: "job-unknown")
        labels[unknown.paymentId] = "unknown"
        let batch = [
            plain,                                                                                                  // 0 plain
            try payment("gateway", merchant: "authz-gd", data: AuthorizeStageTests.stored(nil, walletToken: AuthorizeStageTests.walletToken)),
            plain,                                                                                                  // 2 repeated in the batch
            try payment("currency", currency: "EUR"),                                                              // 3 validation failure
            prepared,                                                                                               // 4 already prepared
            try payment("no-card", data: nil),                                                                      // 5 card data missing
            try payment("last"),                                                                                    // 6 plain
        ]
        return Scenario(prior: [prepared], batch: batch, failing: [try payment("with-failing"), received, unknown], labels: labels)
    }

    static func normalized(_ result: Result<StageOutcome, StageFailure>, labels: [UUID: String]) -> String {
        switch result {
        case .success(.handOff(let handOff)): "handOff \(handOff.target) \(handOff.message.flatMap { labels[$0.paymentId] } ?? "?")"
        case .success(let other): "\(other)"
        case .failure(let failure): "failure \(failure.code)"
        }
    }

    /// Runs the scenario through `stage` and returns the normalised outcomes and every payment's rows by label.
    static func run(_ stage: AuthorizeStage, harness: AuthorizeHarness) throws -> (outcomes: [String], rows: [String: PaymentSnapshot]) {
        let scenario = try scenario(harness)
        let database = try harness.database()
        defer { database.close() }
        #expect(stage.process(scenario.prior, database: database).allSatisfy { (try? $0.get()) != nil })
        let outcomes = [scenario.batch, scenario.failing].flatMap { batch in
            stage.process(batch, database: database).map { normalized($0, labels: scenario.labels) }
        }
        var rows: [String: PaymentSnapshot] = [:]
        for (id, label) in scenario.labels {
            rows[label] = try PaymentSnapshot.load(id, vault: harness.vault, on: database)
        }
        return (outcomes, rows)
    }

    /// A plain batch costs the same four prepared statements whatever its size, as `pg_prepared_statements` counts them:
    /// the locking read, the merchant's revalidation (the harness's cache has no TTL), the write and `COMMIT` (`BEGIN` is a simple
    /// query, not counted).
    @Test func aPlainBatchCostsTheSameFewStatementsWhateverItsSize() throws {
        let harness = try AuthorizeHarness()
        defer { harness.tearDown() }
        try AuthorizeStageTests.applyStandardMerchants(harness)
        let stage = harness.makeStage()
        let database = try harness.database()
        defer { database.close() }
        for size in [1, 12] {
            let batch = try (0..<size).map { index in
                try harness.insertPayment(merchantId: "authz-md", amount: 2000, currency: "GBP", orderReference: "ORDER-\(size)-\(index)",
                                          data: AuthorizeStageTests.stored())
            }
            let run = try StatementCounter.counting(on: database) { stage.process(batch, database: database) }
            #expect(run.value == batch.map { .success(.handOff(to: .submit, $0)) })
            print("authorize statements per plain batch of \(size): \(run.statements)")
            #expect(run.statements == 4, "batch of \(size)")
        }
    }

    @Test func aMixedBatchLeavesTheRowsOfEachKind() throws {
        let harness = try AuthorizeHarness()
        defer { harness.tearDown() }
        try AuthorizeStageTests.applyStandardMerchants(harness)
        let run = try Self.run(harness.makeStage(), harness: harness)

        #expect(run.outcomes == [
            "handOff submit plain", "handOff submit gateway", "handOff submit plain", "handOff notify currency",
            "handOff submit prepared", "handOff notify no-card", "handOff submit last",
            "handOff submit with-failing", "failure payment_not_decrypted", "failure unknown_payment",
        ])
        let plain = try #require(run.rows["plain"])
        #expect(plain.status == "prepared" && plain.stage == "submit")
        #expect(plain.events == ["decrypted→prepared submit authorize - -"], "the duplicate in the batch wrote nothing")
        #expect(plain.request?.claims["payload"]?["pan"]?.stringValue == AuthorizeStageTests.pan)
        #expect(plain.request?.orderReference == "ORDER-plain")
        #expect(plain.cardHeld)
        #expect(run.rows["gateway"]?.request?.requestTypes == ["THREEDQUERY", "AUTH"])
        #expect(run.rows["gateway"]?.request?.claims["payload"]?["wallettoken"]?.stringValue == #"{"token":\#(AuthorizeStageTests.walletToken)}"#, "the one wallettoken shape")
        let currency = try #require(run.rows["currency"])
        #expect(currency.status == "failed" && currency.stage == "notify" && currency.errorCode == "invalid_currency")
        #expect(currency.errorMessage == currency.events.last.flatMap { $0.split(separator: " ", maxSplits: 4).last.map(String.init) })
        #expect(currency.events.count == 1 && currency.events[0].hasPrefix("decrypted→failed notify pipeline invalid_currency "))
        #expect(currency.cardHeld == false, "the terminal purge shredded the card data")
        #expect(currency.request == nil)
        #expect(run.rows["no-card"]?.errorCode == "card_data_missing")
        #expect(run.rows["received"]?.status == "received")
        #expect(run.rows["received"]?.events == [])
        #expect(run.rows["prepared"]?.events == ["decrypted→prepared submit authorize - -"])
        #expect(run.rows["with-failing"]?.status == "prepared", "a message's decided failure does not roll back its batch")
    }
}
}
