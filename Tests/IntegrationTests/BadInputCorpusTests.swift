import AMQP
import ApplePay
import ApplePaySandbox
import Foundation
import PaymentStages
import PayPipeDevTools
import Pipeline
import Testing

extension Integration {
    /// The bad-input corpus (Tests/Fixtures/bad-input/manifest.json) published through the real ingress
    /// (`paypipe.jobs` / `payment.requested`) into the real worker processes (``PipelineProcesses``: the four stages,
    /// the gateway simulator, the webhook receiver), with good jobs interleaved. Every case must land exactly where the
    /// manifest says, with its code, without echoing card or token data in any reason; every good job must be
    /// authorized; the decrypt worker must be the same process at the end, healthy, with nothing left in any stage queue.
    ///
    /// Three rounds: (1) the static and minted cases, (2) replays of round-1 tokens once those payments exist,
    /// (3) webhook URLs aimed at private addresses, after `paypipe-notify` is restarted with
    /// `PAYPIPE_WEBHOOK_ALLOW_PRIVATE=0` — the production default, set explicitly because production mode also demands
    /// broker and database credentials the test services lack — where the SSRF guard refuses them (in sandbox mode it
    /// allows loopback, which rounds 1-2 use to verify every webhook).
    @Suite struct BadInputCorpusTests {
        typealias Case = BadInputCorpus.Case

        /// A payment row as the assertions need it.
        struct Payment {
            let id: String
            let status: String
            let stage: String
            let code: String?
            let reason: String?
        }

        /// Builds the bodies of dynamic cases and good jobs, remembering fragments of every minted token so no
        /// reason may echo them.
        final class Builder {
            let sandbox: SandboxEnvironment
            let maxMessageBytes: Int
            let receiverPort: Int
            private(set) var secrets: Set<String> = ["4111111111111111", "AOOkA5VbH8mMAAKhnQNnAoABFA==", String(repeating: "A", count: 32)]
            private(set) var tokens: [String: [UInt8]] = [:]   // job id -> token

            init(sandbox: SandboxEnvironment, maxMessageBytes: Int, receiverPort: Int) {
                self.sandbox = sandbox
                self.maxMessageBytes = maxMessageBytes
                self.receiverPort = receiverPort
            }

            func token(for jobId: String, amount: Int64 = 1099, currencyNumeric: String = "826",
                       _ customize: (inout SandboxMintRequest) -> Void = { _ in }) throws -> [UInt8] {
                let token = try sandbox.mintJobToken(amount: amount, currencyNumeric: currencyNumeric, customize)
                let object = try #require(try JSONSerialization.jsonObject(with: Data(token)) as? [String: Any])
                let paymentData = object["paymentData"] as? [String: Any] ?? object
                let header = paymentData["header"] as? [String: Any] ?? [:]
                for fragment in [paymentData["data"], paymentData["signature"], header["ephemeralPublicKey"], header["transactionId"]] {
                    if let fragment = fragment as? String, fragment.count >= 16 { secrets.insert(String(fragment.prefix(24))) }
                }
                tokens[jobId] = token
                return token
            }

            func good(_ jobId: String) throws -> JobIngress.Job {
                JobIngress.Job(body: try SandboxEnvironment.jobBody(jobId, token: token(for: jobId)), messageId: jobId)
            }

            /// A valid job padded (with an ignored field) to exactly `size` bytes.
            func sized(_ jobId: String, _ size: Int) throws -> [UInt8] {
                let token = try token(for: jobId)
                let base = try SandboxEnvironment.jobBody(jobId, token: token, extra: ["padding": ""])
                let body = try SandboxEnvironment.jobBody(jobId, token: token, extra: ["padding": String(repeating: "x", count: size - base.count)])
                try #require(body.count == size)
                return body
            }

            func job(_ item: Case, replaying: [UInt8]? = nil) throws -> JobIngress.Job {
                if let body = try item.staticBody() { return JobIngress.Job(body: body, messageId: item.id) }
                let recipe = try #require(item.build, "\(item.id) has neither file nor build")
                let jobId = item.jobId
                let body: [UInt8]
                switch recipe {
                case _ where recipe.hasPrefix("token:"):
                    let defect = try #require(TokenDefect(rawValue: String(recipe.dropFirst(6))), "unknown token defect in \(recipe)")
                    body = try SandboxEnvironment.jobBody(jobId, token: token(for: jobId) { defect.apply(to: &$0, sandbox: sandbox) })
                case "amountMismatch": body = try SandboxEnvironment.jobBody(jobId, token: token(for: jobId, amount: 1000))
                case "currencyMismatch": body = try SandboxEnvironment.jobBody(jobId, token: token(for: jobId, currencyNumeric: "978"))
                case "unknownMerchant": body = try SandboxEnvironment.jobBody(jobId, token: token(for: jobId), merchantId: "merchant-never-applied")
                case "replay": body = try SandboxEnvironment.jobBody(jobId, token: try #require(replaying, "replay needs a token"))
                case "oversized": body = try sized(jobId, maxMessageBytes + 1)
                case "atLimit": body = try sized(jobId, maxMessageBytes)
                case "good": body = try SandboxEnvironment.jobBody(jobId, token: token(for: jobId))
                case "privateWebhook":
                    let url = (item.notifyUrl ?? "").replacingOccurrences(of: "{receiverPort}", with: String(receiverPort))
                    body = try SandboxEnvironment.jobBody(jobId, token: token(for: jobId), extra: url.isEmpty ? [:] : ["notifyUrl": url])
                default:
                    throw TestFailure("unknown build recipe \(recipe) of \(item.id)")
                }
                var job = JobIngress.Job(body: body, messageId: item.id)
                for (name, value) in item.headers ?? [:] {
                    switch value {
                    case .int(let integer): job.headers[name] = .int(integer)
                    case .string(let string): job.headers[name] = .string(string)
                    }
                }
                return job
            }
        }

        static func payments() throws -> [String: Payment] {
            let database = try TestServices.database()
            defer { database.close() }
            var rows: [String: Payment] = [:]
            for row in try database.query("SELECT id, job_id, status, stage, error_code, error_message FROM payments") {
                rows[try row.decode("job_id", as: String.self)] = Payment(
                    id: try row.decode("id", as: UUID.self).uuidString.lowercased(), status: try row.decode("status", as: String.self),
                    stage: try row.decode("stage", as: String.self), code: try row.decode("error_code", as: String?.self),
                    reason: try row.decode("error_message", as: String?.self))
            }
            return rows
        }

        /// Waits until every job in `jobIds` is a payment notified to the end (stage `done`) and the decrypt DLQ holds
        /// `deadLetters` messages.
        static func settle(_ what: String, jobIds: [String], deadLetters: Int, connection: AMQPConnection) {
            var pending: [String] = []
            var depth = 0
            do {
                try TestServices.eventually(timeout: 60, what) {
                    let rows = try payments()
                    depth = Int(try connection.queueDeclarePassive(Stage.decrypt.deadLetterQueueName).messages)
                    pending = jobIds.filter { rows[$0]?.stage != "done" }.map { "\($0): \(rows[$0].map { "\($0.status)/\($0.stage)/\($0.code ?? "-")" } ?? "none")" }
                    return pending.isEmpty && depth == deadLetters
                }
            } catch {
                // Recorded, not thrown: the per-case checks that follow say which case went where.
                Issue.record("\(error); \(depth) of \(deadLetters) dead letters; not done: \(pending.prefix(20))")
            }
        }

        /// Publishes `bad` with a good job after every `every` of them; returns the good job ids.
        static func interleaved(_ bad: [JobIngress.Job], goodPrefix: String, every: Int, builder: Builder) throws -> (jobs: [JobIngress.Job], goods: [String]) {
            var jobs: [JobIngress.Job] = []
            var goods: [String] = []
            for (index, job) in bad.enumerated() {
                if index % every == 0 {
                    goods.append("\(goodPrefix)-\(goods.count)")
                    jobs.append(try builder.good(goods.last!))
                }
                jobs.append(job)
            }
            goods.append("\(goodPrefix)-\(goods.count)")
            jobs.append(try builder.good(goods.last!))
            return (jobs, goods)
        }

        @Test func everyBadInputLandsWhereTheManifestSaysAndTheWorkerKeepsRunning() throws {
            let corpus = try BadInputCorpus.load()
            let stack = try PipelineProcesses()
            defer {
                stack.stop()
                stack.removeFiles()
            }
            let configuration = try WorkerConfiguration(stage: .decrypt, environment: EnvironmentReader(stack.environment))
            let builder = Builder(sandbox: try SandboxEnvironment.open(directory: stack.sandboxDirectory),
                                  maxMessageBytes: configuration.maxMessageBytes, receiverPort: stack.receiverPort)
            let decrypt = try #require(stack.process("paypipe-decrypt"))
            let connection = try TestServices.amqp()
            let results = "bad-input-results-\(UUID().uuidString.prefix(8))"
            defer {
                _ = try? connection.deleteQueue(results)
                connection.close()
            }
            try connection.declareQueue(AMQPQueue(name: results, durable: false, arguments: ["x-expires": .int(300_000)]))
            try connection.bind(AMQPBinding(queue: results, exchange: PipelineTopology.resultsExchange, routingKey: "#"))
            func publish(_ jobs: [JobIngress.Job]) throws { try JobIngress.publish(jobs, retrySchedule: configuration.retrySchedule) }

            let replays = corpus.cases.filter { $0.build == "replay" }
            let privateWebhooks = corpus.cases.filter { $0.expect.landing == .webhookRefused }
            let firstRound = corpus.cases.filter { $0.build != "replay" && $0.expect.landing != .webhookRefused }
            let deadLetters = corpus.cases.filter { $0.expect.landing == .dlq }
            let attributable: (([Case]) -> [String]) = { $0.filter { $0.expect.landing != .dlq }.map(\.jobId) }
            var published: [String: [UInt8]] = [:]

            // Round 1: everything that needs no earlier payment, a good job before every fourth bad one.
            let round1 = try Self.interleaved(try firstRound.map { try builder.job($0) }, goodPrefix: "good-1", every: 4, builder: builder)
            for job in round1.jobs { published[job.messageId ?? ""] = job.body }
            try publish(round1.jobs)
            Self.settle("round 1 settled", jobIds: attributable(firstRound) + round1.goods, deadLetters: deadLetters.count, connection: connection)

            // Round 2: replays of round-1 tokens whose payments now exist.
            let replayed = try #require(builder.tokens[round1.goods[0]])
            let round2 = try Self.interleaved(try replays.map { try builder.job($0, replaying: replayed) }, goodPrefix: "good-2", every: 1, builder: builder)
            try publish(round2.jobs)
            Self.settle("round 2 settled", jobIds: attributable(replays) + round2.goods, deadLetters: deadLetters.count, connection: connection)
            let verifiedBeforeRound3 = stack.verifiedWebhooks().count

            // Round 3: notify with private targets refused, as production has it by default.
            try stack.restart("paypipe-notify", extra: ["PAYPIPE_WEBHOOK_ALLOW_PRIVATE": "0"])
            try TestServices.eventually(timeout: 20, "notify restarted refusing private targets") {
                let log = (try? String(contentsOfFile: stack.logPath("paypipe-notify"), encoding: .utf8)) ?? ""
                return log.contains("\"allowPrivateTargets\":false")
            }
            try publish(try privateWebhooks.map { try builder.job($0) })
            Self.settle("round 3 settled", jobIds: attributable(privateWebhooks), deadLetters: deadLetters.count, connection: connection)
            // Notify publishes a payment's results event after committing `done`: collect until every payment has one.
            var resultDeliveries: [AMQPDelivery] = []
            let notified = Set(try Self.payments().values.filter { $0.stage == "done" }.map(\.id))
            try TestServices.eventually(timeout: 30, "a results event for every payment notified") {
                resultDeliveries += try connection.drain(results)
                return notified.isSubset(of: resultDeliveries.compactMap { $0.properties.headers["paymentId"]?.stringValue?.lowercased() })
            }
            Thread.sleep(forTimeInterval: 0.5)   // anything extra (a second event, a late request) would arrive now
            resultDeliveries += try connection.drain(results)

            // The decrypt worker took all of it: same process, healthy, no queue holds anything.
            #expect(decrypt.isRunning, "paypipe-decrypt is the process started at the beginning")
            let decryptLog = try String(contentsOfFile: stack.logPath("paypipe-decrypt"), encoding: .utf8)
            #expect(decryptLog.components(separatedBy: "\"event\":\"worker_started\"").count == 2, "started exactly once")
            #expect(!decryptLog.contains("\"retry_scheduled\""), "no bad input is retried: each is classified at once")
            let port = try #require(stack.metricsPort("paypipe-decrypt"))
            #expect(try HTTPProbe.get("http://127.0.0.1:\(port)/healthz").status == 200)
            for stage in Stage.allCases {
                #expect(try connection.queueDeclarePassive(stage.queueName).messages == 0, "\(stage.queueName) is empty")
            }

            let payments = try Self.payments()
            let goods = round1.goods + round2.goods
            #expect(payments.count == goods.count + corpus.cases.count - deadLetters.count, "no payment for any dead-lettered input")
            for good in goods {
                #expect(payments[good]?.status == "authorized" && payments[good]?.stage == "done", "\(good)")
            }

            var events: [String: [(type: String, code: String?, reason: String?)]] = [:]
            for delivery in resultDeliveries {
                let event = try #require(try JSONSerialization.jsonObject(with: Data(delivery.body)) as? [String: Any])
                let data = try #require(event["data"] as? [String: Any])
                let error = data["error"] as? [String: Any]
                events[(data["paymentId"] as? String ?? "").lowercased(), default: []].append(
                    (event["type"] as? String ?? "", error?["code"] as? String, error?["reason"] as? String))
            }
            let webhooks = stack.verifiedWebhooks()
            func webhookTypes(_ paymentId: String) -> [String] {
                webhooks.filter { ($0["paymentId"] as? String)?.lowercased() == paymentId }.compactMap { $0["type"] as? String }
            }
            let database = try TestServices.database()
            defer { database.close() }

            var deadLettered: [String: AMQPDelivery] = [:]
            for delivery in try connection.drain(Stage.decrypt.deadLetterQueueName) {
                #expect(deadLettered.updateValue(delivery, forKey: delivery.properties.messageId ?? "") == nil, "one dead letter per case")
            }
            var reasons: [(String, String)] = []

            for item in corpus.cases {
                let payment = payments[item.jobId]
                switch item.expect.landing {
                case .dlq:
                    guard let letter = deadLettered[item.id] else {
                        Issue.record("\(item.id): no dead letter (payment: \(String(describing: payment)))")
                        continue
                    }
                    let headers = letter.properties.headers
                    #expect(headers[DeliveryRouter.Header.errorCode]?.stringValue == item.expect.code, "\(item.id)")
                    #expect(headers[DeliveryRouter.Header.stage]?.stringValue == "decrypt", "\(item.id)")
                    #expect(letter.body == published[item.id], "\(item.id): the dead letter keeps the original body")
                    let reason = headers[DeliveryRouter.Header.error]?.stringValue ?? ""
                    #expect(!reason.isEmpty, "\(item.id) has a reason")
                    reasons.append((item.id, reason))
                    #expect(payment == nil, "\(item.id): dead-lettered input makes no payment")
                case .failed:
                    guard let payment else {
                        Issue.record("\(item.id): no payment")
                        continue
                    }
                    #expect(payment.status == "failed" && payment.code == item.expect.code,
                            "\(item.id): \(payment.status) \(payment.code ?? "-") (\(payment.reason ?? "")), expected \(item.expect.code)")
                    reasons.append((item.id, payment.reason ?? ""))
                    let notified = events[payment.id] ?? []
                    #expect(notified.map(\.type) == ["payment.failed"] && notified.first?.code == item.expect.code, "\(item.id): \(notified)")
                    reasons.append((item.id, notified.first?.reason ?? ""))
                    #expect(webhookTypes(payment.id) == ["payment.failed"], "\(item.id): one signed webhook")
                case .processed:
                    #expect(payment?.status == item.expect.status && payment?.stage == "done", "\(item.id): \(String(describing: payment))")
                    #expect(events[payment?.id ?? ""]?.map(\.type) == ["payment.\(item.expect.status ?? "")"], "\(item.id)")
                case .webhookRefused:
                    guard let payment else {
                        Issue.record("\(item.id): no payment")
                        continue
                    }
                    #expect(payment.status == item.expect.status && payment.stage == "done", "\(item.id): \(payment)")
                    let attempts = try database.query("SELECT outcome, error FROM webhook_deliveries WHERE payment_id = $1", [UUID(uuidString: payment.id)!])
                    #expect(attempts.count == 1, "\(item.id): one recorded attempt")
                    for attempt in attempts {
                        #expect(try attempt.decode("outcome", as: String.self) == "failed", "\(item.id)")
                        let error = try attempt.decode("error", as: String?.self) ?? ""
                        #expect(error.hasPrefix(item.expect.code + ":"), "\(item.id): \(error)")
                    }
                    #expect(events[payment.id]?.map(\.type) == ["payment.\(item.expect.status ?? "")"], "\(item.id): the results event is still sent")
                    #expect(webhookTypes(payment.id).isEmpty, "\(item.id): no request reached the receiver")
                }
            }
            #expect(Set(deadLettered.keys) == Set(deadLetters.map(\.id)), "nothing else was dead-lettered")
            #expect(stack.verifiedWebhooks().count == verifiedBeforeRound3, "no webhook was sent to a private target")
            let receiverLog = (try? String(contentsOfFile: stack.receiverLog, encoding: .utf8)) ?? ""
            #expect(!receiverLog.contains("webhook_rejected"))

            // Reasons name the problem, never the card or the token.
            for (id, reason) in reasons {
                #expect(reason.count <= 501, "\(id): bounded reason")
                for secret in builder.secrets where reason.contains(secret) {
                    Issue.record("\(id): reason echoes token or card data: \(reason)")
                }
            }
        }

        /// The corpus itself: every fixture file is a case, attributable static cases carry their job id, and
        /// docs/job-contract.md shows the manifest's table.
        @Test func manifestMatchesTheFixturesAndTheContractDocument() throws {
            let corpus = try BadInputCorpus.load()
            #expect(Set(corpus.cases.map(\.id)).count == corpus.cases.count, "unique ids")
            let files = try FileManager.default.contentsOfDirectory(atPath: BadInputCorpus.directory.appendingPathComponent("cases").path)
            #expect(Set(files) == Set(corpus.cases.compactMap(\.file)))
            for item in corpus.cases {
                #expect((item.file == nil) != (item.build == nil), "\(item.id): a file or a recipe")
                if item.expect.landing != .dlq, let body = try item.staticBody() {
                    #expect(String(decoding: body, as: UTF8.self).contains("\"jobId\":\"\(item.jobId)\""), "\(item.id)")
                }
            }
            let contract = try String(contentsOf: PipelineProcesses.packageRoot.appendingPathComponent("docs/job-contract.md"), encoding: .utf8)
            #expect(contract.contains(corpus.markdownTable), "docs/job-contract.md holds the manifest's table:\n\(corpus.markdownTable)")
        }
    }
}
