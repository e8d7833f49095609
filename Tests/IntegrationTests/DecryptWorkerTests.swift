import AMQP
import ApplePay
import ApplePaySandbox
import Crypto
import Foundation
import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

extension Integration {
/// The decrypt worker on the real RabbitMQ and PostgreSQL, with tokens minted by the sandbox PKI.
@Suite struct DecryptWorkerTests {
    @Test func validJobsAdvanceWithCardDataEncrypted() throws {
        let harness = try DecryptHarness()
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        var rsa = SandboxMintRequest(merchantIdentifier: harness.sandbox.rsaMerchant.merchantIdentifier, amount: 500, currencyNumeric: "392")
        rsa.version = .rsaV1
        rsa.merchant = harness.sandbox.rsaMerchant
        try harness.publishJobs([
            try harness.job("ec-1", token: harness.token()),
            try harness.job("rsa-1", token: harness.sandbox.pki.mintToken(rsa), amount: 500, currency: "JPY"),
        ])
        try TestServices.eventually("both decrypted") {
            try harness.outcome("ec-1")?.status == "decrypted" && harness.outcome("rsa-1")?.status == "decrypted"
        }
        try TestServices.eventually("hand-offs to authorize") { try harness.base.depth("paypipe.authorize") == 2 }
        let database = try TestServices.database()
        defer { database.close() }
        let row = try database.query(
            "SELECT c.ciphertext, c.key_id, p.id, p.token_transaction_id FROM card_data c JOIN payments p ON p.id = c.payment_id WHERE p.job_id = 'ec-1'")[0]
        let ciphertext = try row.decode("ciphertext", as: [UInt8].self)
        #expect(!String(decoding: ciphertext, as: UTF8.self).contains("4111111111111111"))
        #expect(try row.decode("key_id", as: String.self) == harness.vault.keyring.current.id)
        #expect(try row.decode("token_transaction_id", as: String?.self) != nil)
        let stored = try #require(try CardDataStore(vault: harness.vault).load(try row.decode("id", as: UUID.self), on: database))
        #expect(stored.decrypted?.applicationPrimaryAccountNumber == "4111111111111111")
        #expect(stored.decrypted?.transactionAmount == 1099)
    }

    @Test func eachBadTokenFailsItsPaymentWithItsCode() throws {
        let harness = try DecryptHarness()
        func defective(_ defect: TokenDefect) throws -> [UInt8] { try harness.token { defect.apply(to: &$0, sandbox: harness.sandbox) } }
        let cases: [(jobId: String, code: String, token: [UInt8])] = [
            ("bad-signature", "signature_invalid", try defective(.corruptSignature)),
            ("foreign-root", "certificate_invalid", try defective(.foreignRoot)),
            ("stale", "signing_time_out_of_range", try defective(.staleSigningTime)),
            ("future", "signing_time_out_of_range", try defective(.futureSigningTime)),
            ("other-merchant", "unknown_merchant_key", try defective(.otherMerchantKey)),
            ("bad-ciphertext", "decryption_failed", try defective(.corruptCiphertext)),
            ("bad-payload", "payload_invalid", try defective(.invalidPayload)),
            ("bad-base64", "malformed_token", Array(#"{"version":"EC_v1","data":"!!!","signature":"???","header":{"ephemeralPublicKey":"x","publicKeyHash":"y","transactionId":"zz"}}"#.utf8)),
            ("bad-version", "unsupported_version", Array(String(decoding: try harness.token(), as: UTF8.self).replacingOccurrences(of: "EC_v1", with: "EC_v9").utf8)),
            ("amount", "amount_mismatch", try harness.token(amount: 1000)),
            ("currency", "amount_mismatch", try harness.token(currencyNumeric: "978")),
        ]
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publishJobs(try cases.map { try harness.job($0.jobId, token: $0.token) } + [try harness.job("still-fine", token: harness.token())])
        try TestServices.eventually("the worker kept going") { try harness.outcome("still-fine")?.status == "decrypted" }
        for testCase in cases {
            try TestServices.eventually("\(testCase.jobId) failed") { try harness.outcome(testCase.jobId)?.status == "failed" }
            #expect(try harness.outcome(testCase.jobId)?.code == testCase.code, "\(testCase.jobId)")
        }
        try TestServices.eventually("failures handed to notify") { try harness.base.depth("paypipe.notify") == cases.count }
        #expect(!harness.logSink.lines.joined().contains("4111111111111111"), "no PAN in logs")
    }

    /// A 6-minute backlog (a decrypt outage): the device signed and the backend published 6 minutes before decrypt first
    /// sees the job. Both clocks are injected into the past, so no test waits. The signing-time window is measured
    /// from the AMQP `timestamp` the publisher set; a timestamp outside [first receipt − PAYPIPE_MAX_QUEUE_AGE,
    /// first receipt + PAYPIPE_APPLEPAY_MAX_FUTURE_SKEW] is ignored and first receipt is the clock, as without one.
    @Test func aBacklogIsJudgedByThePublishTimestamp() throws {
        let harness = try DecryptHarness()
        let now = Date()
        func signed(_ offset: TimeInterval, pan: String) throws -> [UInt8] {
            try harness.token(pan: pan) { $0.signingTime = now.addingTimeInterval(offset) }
        }
        let jobs: [(id: String, token: [UInt8], timestamp: Date?, status: String)] = [
            ("backlog", try signed(-362, pan: "4111111111111111"), now.addingTimeInterval(-360), "decrypted"),
            ("backlog-untimed", try signed(-362, pan: "5500005555555559"), nil, "failed"),
            // Older than the queue-age bound: ignored (the exact edges are VerificationClockTests'), so first receipt judges.
            ("backlog-ancient-stamp", try signed(-362, pan: "4000056655665556"), now.addingTimeInterval(-25 * 3600), "failed"),
            // Later than first receipt + the future skew: ignored, or a publisher's clock could let future tokens in.
            ("backlog-future-stamp", try signed(600, pan: "4242424242424242"), now.addingTimeInterval(600), "failed"),
        ]
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publishJobs(try jobs.map { JobIngress.Job(body: try harness.job($0.id, token: $0.token), timestamp: $0.timestamp) })
        for job in jobs {
            try TestServices.eventually("\(job.id) settled") { try harness.outcome(job.id).map { $0.status != "received" } ?? false }
            let outcome = try harness.outcome(job.id)
            #expect(outcome?.status == job.status, "\(job.id): \(String(describing: outcome))")
            if job.status == "failed" { #expect(outcome?.code == "signing_time_out_of_range", "\(job.id)") }
        }
    }

    /// Apple's step 6: the job's `applicationData` (base64 of the app's bytes) must hash to the header's
    /// `applicationData`; differing, or present on one side only, fails the payment `application_data_mismatch`.
    @Test func applicationDataMustMatchTheTokenHeader() throws {
        let harness = try DecryptHarness()
        let appData = Array("order-42|basket-7".utf8)
        func token(_ pan: String, appData: [UInt8]?) throws -> [UInt8] {
            try harness.token(pan: pan) { $0.applicationData = appData }
        }
        func job(_ id: String, _ token: [UInt8], appData: [UInt8]?) throws -> [UInt8] {
            try SandboxEnvironment.jobBody(id, token: token, extra: appData.map { ["applicationData": Data($0).base64EncodedString()] } ?? [:])
        }
        let cases: [(id: String, body: [UInt8], code: String?)] = [
            ("appdata-match", try job("appdata-match", token("4111111111111111", appData: appData), appData: appData), nil),
            ("appdata-neither", try job("appdata-neither", token("4000056655665556", appData: nil), appData: nil), nil),
            ("appdata-differ", try job("appdata-differ", token("5500005555555559", appData: appData), appData: Array("order-43".utf8)),
             "application_data_mismatch"),
            ("appdata-job-lacks", try job("appdata-job-lacks", token("4242424242424242", appData: appData), appData: nil), "application_data_mismatch"),
            ("appdata-header-lacks", try job("appdata-header-lacks", token("4012888888881881", appData: nil), appData: appData),
             "application_data_mismatch"),
        ]
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publishJobs(cases.map(\.body))
        for testCase in cases {
            try TestServices.eventually("\(testCase.id) settled") { try harness.outcome(testCase.id).map { $0.status != "received" } ?? false }
            let outcome = try harness.outcome(testCase.id)
            #expect(outcome?.status == (testCase.code == nil ? "decrypted" : "failed"), "\(testCase.id): \(String(describing: outcome))")
            #expect(outcome?.code == testCase.code, "\(testCase.id)")
        }
    }

    /// A merchant migrating its publishers sets `applicationDataCheck: "when-present"`: a header value is accepted from a
    /// job without one; a job with one is still checked, and one the header lacks is still refused.
    @Test func whenPresentAcceptsAJobThatDoesNotSendApplicationDataYet() throws {
        let harness = try DecryptHarness()
        var document = harness.sandbox.merchantDocument()
        document.id = "migrating-merchant"
        document.applicationDataCheck = .whenPresent
        let database = try TestServices.database()
        defer { database.close() }
        try MerchantStore(vault: harness.vault).apply(document, baseDirectory: URL(fileURLWithPath: harness.sandbox.directory), deployment: .sandbox, on: database)
        let appData = Array("order-42".utf8)
        func body(_ id: String, pan: String, header: [UInt8]?, job: [UInt8]?) throws -> [UInt8] {
            try SandboxEnvironment.jobBody(id, token: harness.token(pan: pan) { $0.applicationData = header }, merchantId: document.id,
                                           extra: job.map { ["applicationData": Data($0).base64EncodedString()] } ?? [:])
        }
        let cases: [(id: String, body: [UInt8], code: String?)] = [
            ("migrating-job-lacks", try body("migrating-job-lacks", pan: "4111111111111111", header: appData, job: nil), nil),
            ("migrating-differ", try body("migrating-differ", pan: "5500005555555559", header: appData, job: Array("x".utf8)), "application_data_mismatch"),
            ("migrating-header-lacks", try body("migrating-header-lacks", pan: "4242424242424242", header: nil, job: appData), "application_data_mismatch"),
        ]
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publishJobs(cases.map(\.body))
        for testCase in cases {
            try TestServices.eventually("\(testCase.id) settled") { try harness.outcome(testCase.id).map { $0.status != "received" } ?? false }
            #expect(try harness.outcome(testCase.id)?.code == testCase.code, "\(testCase.id)")
        }
    }

    /// The series the `PaymentFailuresByCode` alert uses moves when a payment fails: scraped from the worker's
    /// `/metrics`, as Prometheus does (docs/operations.md, prometheus/alerts.yml), after causing one failure per code.
    @Test func aFailedPaymentMovesPaymentsFailedTotalOnMetrics() throws {
        let harness = try DecryptHarness()
        let runtime = try harness.startedRuntime(reconcileInterval: "200ms")
        defer { runtime.stopAndWait() }
        func scraped(_ code: String) throws -> Double? {
            try runtime.scrape().value("paypipe_payments_failed_total", ["code": code, "stage": "decrypt"])
        }
        // The tally starts at the audit trail's end once the reconciler has read it: wait for that first round, which
        // ends with the upkeep's certificate gauge (the backlog gauges are there from start-up, before any round).
        try TestServices.eventually("the reconciler ran") { try !runtime.scrape().series("paypipe_certificate_not_after_seconds").isEmpty }
        let before = try scraped("amount_mismatch") ?? 0
        try harness.publishJobs([try harness.job("metric-amount", token: harness.token(amount: 1000)),
                                 try harness.job("metric-stale", token: harness.token { TokenDefect.staleSigningTime.apply(to: &$0, sandbox: harness.sandbox) })])
        try TestServices.eventually("both failed") {
            try harness.outcome("metric-amount")?.status == "failed" && harness.outcome("metric-stale")?.status == "failed"
        }
        try TestServices.eventually("the failures are counted on /metrics") {
            try scraped("amount_mismatch") == before + 1 && scraped("signing_time_out_of_range").map { $0 >= 1 } == true
        }
    }

    @Test func replayedTokenIsRejectedAndTheFirstPaymentKept() throws {
        let harness = try DecryptHarness()
        let token = try harness.token()
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publishJobs([try harness.job("first", token: token)])
        try TestServices.eventually("first decrypted") { try harness.outcome("first")?.status == "decrypted" }
        try harness.publishJobs([try harness.job("second", token: token)])
        try TestServices.eventually("replay failed") { try harness.outcome("second")?.status == "failed" }
        #expect(try harness.outcome("second")?.code == "token_replayed")
        #expect(try harness.outcome("first")?.status == "decrypted")
    }

    @Test func unattributableJobsAreDeadLetteredWithTheirReasons() throws {
        let harness = try DecryptHarness()
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        let original = try harness.job("job-1", token: harness.token())
        try harness.publishJobs([original, original])   // a plain duplicate: one payment, no dead letter
        try TestServices.eventually("decrypted") { try harness.outcome("job-1")?.status == "decrypted" }
        try harness.publishJobs([
            Array("{\"jobId\": \"x\", ".utf8),
            [0xFF, 0xFE],
            try harness.job("job-2", token: harness.token(), merchantId: "nobody"),
            try harness.job("job-1", token: harness.token(amount: 2000), amount: 2000),   // same id, other content
        ])
        try TestServices.eventually("four dead letters") { try harness.base.depth("paypipe.decrypt.dlq") == 4 }
        let codes = try harness.base.drain("paypipe.decrypt.dlq").compactMap { $0.properties.headers[DeliveryRouter.Header.errorCode]?.stringValue }
        #expect(codes.sorted() == ["idempotency_conflict", "malformed_job", "malformed_job", "unknown_merchant"])
        #expect(try harness.outcome("job-1")?.status == "decrypted", "the first payment is untouched")
        let database = try TestServices.database()
        defer { database.close() }
        #expect(try database.query("SELECT 1 FROM payments WHERE job_id = 'job-1'").count == 1)
        // The duplicate may be on the other lane, which publishes its hand-off after the first lane's insert commits.
        var depth = 0
        try TestServices.eventually("the duplicate's hand-off") {
            depth = try harness.base.depth("paypipe.authorize")
            return depth >= 2
        }
        #expect(depth == 2, "the duplicate re-published the same hand-off: \(depth)")
    }

    /// The worker's handler (``DecryptWorker``) carries what the stage no longer does, off the payment path: its
    /// metrics are the stage's series and the certificate gauge, and its upkeep round watches the certificates and
    /// adds the keys its stage decrypted with to `merchant_key_usage`.
    @Test func theWorkersUpkeepWatchesCertificatesAndFlushesTheStagesKeyUsage() throws {
        let harness = try DecryptHarness()
        let worker = DecryptWorker(harness.makeStage())
        let registry = MetricsRegistry()
        worker.attach(metrics: registry)
        let database = try TestServices.database()
        defer { database.close() }
        let outcomes = worker.process([.job(try PaymentJob.decode(try harness.job("upkeep-1", token: harness.token())))], database: database)
        #expect(outcomes.allSatisfy { (try? $0.get()) != nil })
        #expect(try KeyUsageCounter.usage(on: database).isEmpty, "counted in memory until the upkeep round")

        try worker.upkeep(database: database, logger: Logger(component: "test", threshold: .error))
        let usage = try KeyUsageCounter.usage(on: database)
        #expect(usage.map(\.merchantId) == [SandboxEnvironment.merchantId] && usage.first?.tokens == 1)
        let scraped = try MetricsScrape(registry.render())
        #expect(!scraped.series(CertificateWatch.metric).isEmpty, "the certificate gauge after the round")
        #expect(scraped.series(KeyUsageCounter.metric).values.reduce(0, +) == 1)
    }

    @Test func databaseDumpHoldsNoPlaintextCardData() throws {
        let harness = try DecryptHarness()
        let pans = ["4111111111111111", "5500005555555559", "4000056655665556"]
        let cryptograms = ["AOOkA5VbH8mMAAKhnQNnAoABFA==", "BwABBJQ1AgAAAAAgJDUCAAAAAAA=", "AgAAAAAABk4DWZ4C28yUQAAAAAA="]
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publishJobs(try (0..<3).map { try harness.job("dump-\($0)", token: harness.token(pan: pans[$0], cryptogram: cryptograms[$0])) })
        try TestServices.eventually("decrypted") { try (0..<3).allSatisfy { try harness.outcome("dump-\($0)")?.status == "decrypted" } }
        let dumpPath = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-dump-\(UUID()).sql").path
        defer { try? FileManager.default.removeItem(atPath: dumpPath) }
        let database = try PostgresConfiguration(url: TestServices.databaseURL)
        let status = try ChildProcess.spawn("/usr/bin/pg_dump", [
            "-h", database.host ?? "127.0.0.1", "-p", String(database.port ?? 5432), "-U", database.user ?? "postgres",
            database.database ?? "paypipe_test",
        ], logPath: dumpPath).wait()
        #expect(status == 0)
        let dump = try String(contentsOfFile: dumpPath, encoding: .utf8)
        #expect(dump.contains("card_data"), "the dump really contains the card_data table")
        // Plain text, and hex as pg_dump writes bytea: neither form may appear.
        let hexForms = (pans + cryptograms).map { Hex.encode(Array($0.utf8)) }
        for secret in pans + cryptograms + hexForms {
            #expect(!dump.contains(secret), "plaintext card data in pg_dump")
        }
    }
}
}
