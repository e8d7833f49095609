import Foundation
import PaymentStages
import Pipeline
import Postgres
import Testing

/// The authorize stage's set-based fast path (``AuthorizeStage/handleInBulk(_:transaction:)``) against the one-by-one
/// path: the same batches leave the same rows (statuses, events, stored requests, card data) and give the same
/// outcomes; plain payments are settled in bulk and every odd one is left to the one-by-one path.
extension Integration {
@Suite struct AuthorizeBulkTests {
    /// A batch of every kind the authorize stage meets, after `prior` (processed in an earlier batch); `throwing` holds
    /// the kinds that throw (still `received`, unknown payment), in a batch of their own because they abandon its first
    /// pass. `plain` are the positions of `batch` the bulk path must settle itself; `labels` name every message.
    struct Scenario {
        let prior: [StageMessage]
        let batch: [StageMessage]
        let throwing: [StageMessage]
        let plain: Set<Int>
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
        return Scenario(prior: [prepared], batch: batch, throwing: [try payment("with-throwers"), received, unknown],
                        plain: [0, 1, 6], labels: labels)
    }

    static func normalized(_ result: Result<StageOutcome, StageFailure>, labels: [UUID: String]) -> String {
        switch result {
        case .success(.handOff(let stage, let message)): "handOff \(stage.rawValue) \(labels[message.paymentId] ?? "?")"
        case .success(let other): "\(other)"
        case .failure(let failure): "failure \(failure.code)"
        }
    }

    /// Runs the scenario through `stage` and returns the normalised outcomes and every payment's rows by label.
    static func run<S: TransactionalStageHandler>(
        _ stage: S, harness: AuthorizeHarness
    ) throws -> (outcomes: [String], rows: [String: PaymentSnapshot]) where S.Message == StageMessage {
        let scenario = try scenario(harness)
        let database = try harness.database()
        defer { database.close() }
        #expect(stage.process(scenario.prior, database: database).allSatisfy { (try? $0.get()) != nil })
        let outcomes = [scenario.batch, scenario.throwing].flatMap { batch in
            stage.process(batch, database: database).map { normalized($0, labels: scenario.labels) }
        }
        var rows: [String: PaymentSnapshot] = [:]
        for (id, label) in scenario.labels {
            rows[label] = try PaymentSnapshot.load(id, vault: harness.vault, on: database)
        }
        return (outcomes, rows)
    }

    @Test func theBulkPathLeavesTheSameRowsAndOutcomesAsOneByOne() throws {
        let bulkHarness = try AuthorizeHarness()
        defer { bulkHarness.tearDown() }
        let oneHarness = try AuthorizeHarness()
        defer { oneHarness.tearDown() }
        for harness in [bulkHarness, oneHarness] { try AuthorizeStageTests.applyStandardMerchants(harness) }
        let bulk = try Self.run(bulkHarness.makeStage(), harness: bulkHarness)
        let oneByOne = try Self.run(OneByOneStage(base: oneHarness.makeStage()), harness: oneHarness)

        #expect(bulk.outcomes == oneByOne.outcomes)
        #expect(bulk.outcomes == [
            "handOff submit plain", "handOff submit gateway", "handOff submit plain", "handOff notify currency",
            "handOff submit prepared", "handOff notify no-card", "handOff submit last",
            "handOff submit with-throwers", "failure payment_not_decrypted", "failure unknown_payment",
        ])
        #expect(bulk.rows.keys.sorted() == oneByOne.rows.keys.sorted())
        for (label, row) in bulk.rows.sorted(by: { $0.key < $1.key }) {
            #expect(row == oneByOne.rows[label], "\(label)")
        }
        let plain = try #require(bulk.rows["plain"])
        #expect(plain.status == "prepared" && plain.stage == "submit")
        #expect(plain.events == ["decrypted→prepared submit authorize - -"])
        #expect(plain.request?.claims["payload"]?["pan"]?.stringValue == AuthorizeStageTests.pan)
        #expect(plain.request?.orderReference == "ORDER-plain")
        #expect(bulk.rows["gateway"]?.request?.requestTypes == ["THREEDQUERY", "AUTH"])
        #expect(bulk.rows["gateway"]?.request?.claims["payload"]?["wallettoken"]?.stringValue == #"{"token":\#(AuthorizeStageTests.walletToken)}"#, "the one wallettoken shape")
        #expect(bulk.rows["currency"]?.errorCode == "invalid_currency")
        #expect(bulk.rows["currency"]?.cardHeld == false)
        #expect(bulk.rows["currency"]?.request == nil)
        #expect(bulk.rows["no-card"]?.errorCode == "card_data_missing")
        #expect(bulk.rows["received"]?.status == "received")
        #expect(bulk.rows["prepared"]?.events == ["decrypted→prepared submit authorize - -"])
    }

    @Test func bulkSettlesThePlainPaymentsAndLeavesEveryOddOneToTheOneByOnePath() throws {
        let harness = try AuthorizeHarness()
        defer { harness.tearDown() }
        try AuthorizeStageTests.applyStandardMerchants(harness)
        let scenario = try Self.scenario(harness)
        let stage = harness.makeStage()
        let database = try harness.database()
        defer { database.close() }
        _ = stage.process(scenario.prior, database: database)

        struct RollBack: Error {}
        for batch in [scenario.batch, scenario.throwing] {
            var settled: [StageOutcome?] = []
            #expect(throws: RollBack.self) {
                try database.transaction { transaction in
                    settled = try stage.handleInBulk(batch, transaction: transaction)
                    throw RollBack()
                }
            }
            let expected = batch == scenario.batch ? scenario.plain : [0]
            #expect(Set(settled.indices.filter { settled[$0] != nil }) == expected)
            for index in expected {
                #expect(settled[index] == .handOff(to: .submit, batch[index]))
            }
        }

        // The mixed batch as a whole: bulk first, the rest one by one in the same transaction.
        let results = stage.process(scenario.batch, database: database).map { Self.normalized($0, labels: scenario.labels) }
        #expect(results == [
            "handOff submit plain", "handOff submit gateway", "handOff submit plain", "handOff notify currency",
            "handOff submit prepared", "handOff notify no-card", "handOff submit last",
        ])
        for (index, message) in scenario.batch.enumerated() where index != 2 {
            let events = try harness.events(message.paymentId)
            #expect(events.count == 1, "\(scenario.labels[message.paymentId] ?? "?"): one transition, \(events)")
        }
        #expect(try harness.payment(scenario.batch[0].paymentId)?.status == .prepared)
        #expect(try harness.payment(scenario.batch[3].paymentId)?.status == .failed)
    }
}
}
