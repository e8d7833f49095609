import AMQP
import Foundation
import PaymentStages
import Pipeline
import Testing

extension Integration {
    /// `paypipe` refuses what it does not understand: a misspelled option, a stray word or a repeated single option is
    /// a usage error (exit 64, naming the argument) before any configuration is read and before anything is published.
    /// Through the built binary against the real services (NotifyHarness: its own database and vhost).
    @Suite struct StrictArgumentsCLITests {
        /// The issue's case: `--ammount` was ignored and a full refund published.
        @Test func aMisspelledRefundAmountPublishesNothing() throws {
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            try harness.applyMerchant(webhookURL: nil)
            let payment = try harness.insertPayment()
            let before = try harness.messagesQueued()
            let output = try harness.paypipe(["payment", "refund", payment.paymentId.paymentIDText, "--operation-id", "x", "--ammount", "100"])
            #expect(output.status == 64, "\(output.text)")
            #expect(output.text.contains("--ammount"), "\(output.text)")
            #expect(try harness.messagesQueued() == before, "something was published")
        }

        /// Every command, one misspelled option each (the publishing ones with everything else right, so that before
        /// strict parsing they published): exit 64 naming it, nothing published, no file written. Run once with the
        /// harness's working configuration and once with none at all (production without URLs, which any
        /// configuration read refuses with 78): a usage error comes first.
        @Test func aMisspelledOptionIsAUsageErrorInEveryCommand() throws {
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            try harness.applyMerchant(webhookURL: nil)
            let payment = try harness.insertPayment().paymentId.paymentIDText
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-strict-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            let cases: [(arguments: [String], misspelled: String)] = [
                (["migrate", "--stauts"], "--stauts"),
                (["healthcheck", "http://127.0.0.1:1/healthz", "--timout", "1"], "--timout"),
                (["reconcile", "--stuck-afer", "10m"], "--stuck-afer"),
                (["token", "mint", "--pki-dir", scratch + "/pki", "--merchant-id", "merchant.x", "--amount", "1", "--currency", "978", "--ot", scratch], "--ot"),
                (["token", "decrypt", "--tokne", scratch], "--tokne"),
                (["token", "bench", "--token", scratch, "--second", "1"], "--second"),
                (["sandbox", "init", "--dir", scratch, "--gateway", "http://x"], "--gateway"),
                (["merchant", "apply", "--flie", scratch], "--flie"),
                (["merchant", "list", "--jsn"], "--jsn"),
                (["merchant", "show", "m-notify", "--jsno"], "--jsno"),
                (["merchant", "certs", "--jason"], "--jason"),
                (["merchant", "keys", "--usgae"], "--usgae"),
                (["job", "publish", "--sample", "2", "--sandbox-dir", scratch, "--merchnat", "m-notify"], "--merchnat"),
                (["payment", "show", payment, "--jsn"], "--jsn"),
                (["credential", "list", "--merchant", "m-notify", "--stat", "active"], "--stat"),
                (["credential", "show", "cred_0123456789abcdef01234567", "--merchant", "m-notify", "--jsn"], "--jsn"),
                (["payment", "resolve", payment, "--as", "failed", "--reason", "r", "--opertor", "me"], "--opertor"),
                (["payment", "capture", payment, "--operation-id", "c1", "--amont", "5"], "--amont"),
                (["payment", "void", payment, "--operation-id", "v1", "--amount=5", "--forse"], "--forse"),
                (["payment", "refund", payment, "--operation-id", "r1", "--ammount", "100"], "--ammount"),
                (["stats", "--job-prefx", "x"], "--job-prefx"),
                (["jwt", "decode", "--secrt", "s", "a.b.c"], "--secrt"),
                (["webhooks", "list", "--faild"], "--faild"),
                (["webhooks", "replay", "--payment", payment, "--sinse", "2h"], "--sinse"),
                (["webhooks", "endpoints", "--disable"], "--disable"),
                (["webhooks", "endpoints", "enable", "m-notify", "--ulr", "http://x"], "--ulr"),
                (["dlq", "list", "decrypt", "--limt", "5"], "--limt"),
                (["dlq", "show", "decrypt", "--lmit", "5"], "--lmit"),
                (["dlq", "replay", "decrypt", "--limt", "5"], "--limt"),
            ]
            let before = try harness.messagesQueued()
            let unconfigured = ["PAYPIPE_ENV": "production", "PAYPIPE_DATABASE_URL": "", "PAYPIPE_AMQP_URL": ""]
            for (arguments, misspelled) in cases {
                for output in [try harness.paypipe(arguments), try ChildProcess.runCapturingOutput(PipelineProcesses.binary("paypipe"), arguments, environment: unconfigured)] {
                    #expect(output.status == 64, "paypipe \(arguments.joined(separator: " ")): \(output.text)")
                    #expect(output.text.contains(misspelled), "paypipe \(arguments.joined(separator: " ")): \(output.text)")
                }
            }
            #expect(try harness.messagesQueued() == before, "something was published")
            #expect(!FileManager.default.fileExists(atPath: scratch), "a command wrote \(scratch)")
        }

        /// A word too many, a repeated single option, a flag given a value, an option of another form: usage errors
        /// naming what was wrong, nothing published.
        @Test func strayWordsAndRepeatsAreUsageErrors() throws {
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            try harness.applyMerchant(webhookURL: nil)
            let payment = try harness.insertPayment().paymentId.paymentIDText
            let cases: [(arguments: [String], named: String)] = [
                (["payment", "refund", payment, "100", "--operation-id", "r2"], "'100'"),
                (["payment", "refund", payment, "--operation-id", "r3", "--amount", "100", "--amount", "1"], "--amount given more than once"),
                (["dlq", "replay", "decrypt", "everything"], "'everything'"),
                (["stats", "--json=yes"], "--json takes no value"),
                (["webhooks", "endpoints", "--url", "http://x"], "--url is not an option of paypipe webhooks endpoints"),
                (["payment", "void", payment], "--operation-id"),
                (["dlq", "purge", "decrypt"], "unknown action 'purge'"),
            ]
            let before = try harness.messagesQueued()
            for (arguments, named) in cases {
                let output = try harness.paypipe(arguments)
                #expect(output.status == 64, "paypipe \(arguments.joined(separator: " ")): \(output.text)")
                #expect(output.text.contains(named), "paypipe \(arguments.joined(separator: " ")): \(output.text)")
            }
            #expect(try harness.messagesQueued() == before, "something was published")
        }

        /// `--version` needs no configuration: the CLI and every worker print the version and the commit (this tree is
        /// a git checkout) and exit 0.
        @Test func versionIsPrintedWithoutConfiguration() throws {
            let unconfigured = ["PAYPIPE_ENV": "production", "PAYPIPE_DATABASE_URL": "", "PAYPIPE_AMQP_URL": ""]
            for program in ["paypipe"] + Stage.allCases.map({ "paypipe-\($0.rawValue)" }) {
                let output = try ChildProcess.runCapturingOutput(PipelineProcesses.binary(program), ["--version"], environment: unconfigured)
                #expect(output.status == 0, "\(program): \(output.text)")
                #expect(output.text.hasPrefix("\(program) \(BuildInfo.releaseVersion) (commit "), "\(program): \(output.text)")
            }
        }

        /// `stats` sizes its columns to the codes: the long catalogue codes are printed whole and the counts line up.
        @Test func statsPrintsLongErrorCodesWhole() throws {
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            try harness.applyMerchant(webhookURL: nil)
            let database = try harness.database()
            defer { database.close() }
            for code in ["partial_capture_not_supported", "gateway_record_status_-1"] {
                let id = try harness.insertPayment().paymentId
                try database.query("UPDATE payments SET status = 'failed', error_code = $2 WHERE id = $1", [id, code])
            }
            let output = try harness.paypipe(["stats"])
            #expect(output.status == 0, "\(output.text)")
            let rows = output.text.split(separator: "\n").filter { $0.hasPrefix("failed ") }
            #expect(rows.count == 2 && rows.allSatisfy { $0.hasSuffix(" 1") }, "\(output.text)")
            #expect(rows.contains { $0.contains(" partial_capture_not_supported ") } && rows.contains { $0.contains(" gateway_record_status_-1 ") }, "\(output.text)")
            #expect(Set(rows.map(\.count)).count == 1, "columns not aligned: \(output.text)")
        }
    }
}

extension NotifyHarness {
    /// Messages in every queue of the pipeline's topology in this harness's vhost, and in its results queue: a
    /// command that published anything (a job, a hand-off, an event) changes it. Summed, so a message that moves from
    /// a retry tier to its stage queue meanwhile does not count as published.
    func messagesQueued() throws -> UInt64 {
        let connection = try amqp()
        defer { connection.close() }
        let names = PipelineTopology.topology(retrySchedule: configuration.retrySchedule).queues.map(\.name) + [resultsQueue]
        return try names.reduce(0) { total, name in total + UInt64(try connection.queueDeclarePassive(name).messages) }
    }
}
