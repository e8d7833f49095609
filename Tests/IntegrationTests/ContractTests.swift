import AMQP
import Foundation
import PaymentStages
import PayPipeDevTools
import Pipeline
import Testing

extension Integration {
    /// The job contract as backend teams see it: docs/asyncapi.yaml, the pika example publishing exactly as it
    /// says into a running decrypt worker, and the operator's `paypipe dlq` moving dead letters back.
    /// Needs `swift build` first (the paypipe binary) and python3 with pika and PyYAML (scripts/bootstrap).
    @Suite struct ContractTests {
        static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        static let paypipe = packageRoot.appendingPathComponent(".build/debug/paypipe").path
        static var serviceEnvironment: [String: String] {
            ["PAYPIPE_ENV": "sandbox", "PAYPIPE_AMQP_URL": TestServices.amqpURL, "PAYPIPE_DATABASE_URL": TestServices.databaseURL]
        }

        /// Runs `python3 ARGS` from PATH (whichever python3 the developer has, as the example expects).
        static func python(_ arguments: [String]) throws -> ChildProcess.Output {
            try ChildProcess.runCapturingOutput("/usr/bin/env", ["python3"] + arguments)
        }

        static func temporaryFile(_ contents: [UInt8]) throws -> URL {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-contract-\(UUID().uuidString).json")
            try Data(contents).write(to: url)
            return url
        }

        /// The AsyncAPI document parses and names the exchange, routing keys and properties the code uses; both
        /// JSON Schemas parse and the job schema requires exactly what `PaymentJob.decode` requires.
        @Test func asyncAPIDocumentMatchesTheTopology() throws {
            let script = """
                import json, sys, yaml
                doc = yaml.safe_load(open(sys.argv[1]))
                jobs = doc["channels"]["paypipe.jobs"]
                results = doc["channels"]["paypipe.results"]
                operational = doc["channels"]["paypipe.results/operational"]
                operationJobs = doc["channels"]["paypipe.jobs/operations"]
                operationEvents = doc["channels"]["paypipe.results/operations"]
                credentialEvents = doc["channels"]["paypipe.results/credentials"]
                print(json.dumps({
                    "version": doc["asyncapi"],
                    "jobsExchange": jobs["bindings"]["amqp"]["exchange"]["name"],
                    "jobsType": jobs["bindings"]["amqp"]["exchange"]["type"],
                    "jobKeys": jobs["publish"]["bindings"]["amqp"]["cc"],
                    "deliveryMode": jobs["publish"]["bindings"]["amqp"]["deliveryMode"],
                    "resultsExchange": results["bindings"]["amqp"]["exchange"]["name"],
                    "resultKeys": results["subscribe"]["bindings"]["amqp"]["cc"],
                    "jobPayload": doc["components"]["messages"]["PaymentJob"]["payload"]["$ref"],
                    "eventPayload": doc["components"]["messages"]["PaymentEvent"]["payload"]["$ref"],
                    "operationalExchange": operational["bindings"]["amqp"]["exchange"]["name"],
                    "operationalKeys": operational["subscribe"]["bindings"]["amqp"]["cc"],
                    "operationalPayload": doc["components"]["messages"]["OperationalEvent"]["payload"]["$ref"],
                    "operationJobsExchange": operationJobs["bindings"]["amqp"]["exchange"]["name"],
                    "operationKeys": operationJobs["publish"]["bindings"]["amqp"]["cc"],
                    "operationEventKeys": operationEvents["subscribe"]["bindings"]["amqp"]["cc"],
                    "operationPayload": doc["components"]["messages"]["OperationJob"]["payload"]["$ref"],
                    "operationEventPayload": doc["components"]["messages"]["OperationEvent"]["payload"]["$ref"],
                    "credentialEventKeys": credentialEvents["subscribe"]["bindings"]["amqp"]["cc"],
                    "credentialEventExchange": credentialEvents["bindings"]["amqp"]["exchange"]["name"],
                    "credentialEventPayload": doc["components"]["messages"]["CredentialEvent"]["payload"]["$ref"],
                }))
                """
            let output = try Self.python(["-c", script, Self.packageRoot.appendingPathComponent("docs/asyncapi.yaml").path])
            try #require(output.status == 0, "\(output.text)")
            let line = try #require(output.text.split(separator: "\n").last)
            let document = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(document["version"] as? String == "2.6.0")
            #expect(document["jobsExchange"] as? String == PipelineTopology.jobsExchange)
            #expect(document["jobsType"] as? String == "direct")
            #expect(document["jobKeys"] as? [String] == [PipelineTopology.jobRoutingKey])
            #expect(document["deliveryMode"] as? Int == 2)
            #expect(document["resultsExchange"] as? String == PipelineTopology.resultsExchange)
            #expect(document["resultKeys"] as? [String] == ["payment.authorized", "payment.declined", "payment.failed", "payment.needs_review", "payment.awaiting_amount"])

            let docs = Self.packageRoot.appendingPathComponent("docs")
            #expect(document["operationalExchange"] as? String == PipelineTopology.resultsExchange)
            #expect(document["operationalKeys"] as? [String] == OperationalEvent.Kind.allCases.map(\.rawValue))
            #expect(document["operationJobsExchange"] as? String == PipelineTopology.jobsExchange)
            #expect(document["operationKeys"] as? [String] == OperationRequest.Kind.allCases.map(\.routingKey))
            #expect(document["operationEventKeys"] as? [String]
                    == OperationProtocol.Effect.Event.allCases.map(\.rawValue) + [OperationEvent.failedType])
            #expect(document["credentialEventKeys"] as? [String] == CredentialEventType.allCases.map(\.rawValue))
            #expect(document["credentialEventExchange"] as? String == PipelineTopology.resultsExchange)
            let bound = PipelineTopology.topology(retrySchedule: RetrySchedule(delays: [1], maxRetries: 1)).bindings
                .filter { $0.queue == Stage.operations.queueName && $0.exchange == PipelineTopology.jobsExchange }.map(\.routingKey)
            #expect(bound == OperationRequest.Kind.allCases.map(\.routingKey) + [CompletionRequest.routingKey],
                    "the topology binds exactly the documented keys")
            // A deferred payment's completion: its own channel and schema.
            let asyncAPI = try String(contentsOf: docs.appendingPathComponent("asyncapi.yaml"), encoding: .utf8)
            #expect(asyncAPI.contains("cc: ['\(CompletionRequest.routingKey)']") && asyncAPI.contains("$ref: './schemas/completion.schema.json'"))
            #expect(try JSONSerialization.jsonObject(with: Data(contentsOf: docs.appendingPathComponent("schemas/completion.schema.json"))) is [String: Any])
            for reference in [document["jobPayload"], document["eventPayload"], document["operationalPayload"], document["operationPayload"],
                              document["operationEventPayload"], document["credentialEventPayload"]] {
                let path = try #require(reference as? String)
                let data = try Data(contentsOf: docs.appendingPathComponent(path))
                #expect(try JSONSerialization.jsonObject(with: data) is [String: Any], "\(path) parses")
            }
            let schema = try #require(try JSONSerialization.jsonObject(
                with: Data(contentsOf: docs.appendingPathComponent("schemas/job.schema.json"))) as? [String: Any])
            #expect((schema["required"] as? [String])?.sorted() == ["amount", "jobId", "merchantId", "orderReference"])
            // Exactly one of the Apple Pay token, the TapPay prime and a merchant-initiated payment's stored credential.
            let alternatives = try #require(schema["oneOf"] as? [[String: Any]])
            #expect(alternatives.compactMap { $0["required"] as? [String] }
                    == [["applePayToken"], ["tapPayPrime"], ["initiator", "credentialId", "mitReason"]])
        }

        /// Each example publisher (pika from a token file, Swift from a job file) publishes a token minted by the
        /// sandbox PKI: the message carries the contract's properties (seen through a second queue bound like the
        /// decrypt queue) and becomes a decrypted payment.
        @Test(arguments: ["examples/publish_job.py", ".build/debug/publish-job-example"])
        func examplePublisherPublishesAJobTheDecryptWorkerAccepts(_ example: String) throws {
            let harness = try DecryptHarness()
            let tap = "contract-tap-\(UUID().uuidString.prefix(8))"
            let connection = try TestServices.amqp()
            defer {
                _ = try? connection.deleteQueue(tap)
                connection.close()
            }
            try connection.declareQueue(AMQPQueue(name: tap, durable: false, arguments: ["x-expires": .int(120_000)]))
            try connection.bind(AMQPBinding(queue: tap, exchange: PipelineTopology.jobsExchange, routingKey: PipelineTopology.jobRoutingKey))
            let runtime = try harness.startedRuntime()
            defer { runtime.stopAndWait() }

            let jobId = "contract-\(UUID().uuidString.prefix(8))"
            let path = Self.packageRoot.appendingPathComponent(example).path
            let output: ChildProcess.Output
            if example.hasSuffix(".py") {
                let token = try Self.temporaryFile(try harness.token())
                defer { try? FileManager.default.removeItem(at: token) }
                output = try Self.python([
                    path, "--token", token.path, "--job-id", jobId, "--merchant-id", SandboxEnvironment.merchantId,
                    "--order-reference", "order-\(jobId)", "--amount", "1099", "--currency", "GBP",
                    "--amqp-url", TestServices.amqpURL,
                ])
            } else {
                try #require(FileManager.default.isExecutableFile(atPath: path), "build first (swift build): \(path)")
                let job = try Self.temporaryFile(try harness.job(jobId, token: harness.token()))
                defer { try? FileManager.default.removeItem(at: job) }
                output = try ChildProcess.runCapturingOutput(path, [job.path, "--amqp-url", TestServices.amqpURL])
            }
            #expect(output.status == 0, "\(output.text)")
            #expect(output.text.contains("\"jobId\"") && output.text.contains("true"), "\(output.text)")

            let copy = try #require(try connection.get(queue: tap), "the job reached a queue bound to paypipe.jobs/payment.requested")
            try connection.ack(deliveryTag: copy.deliveryTag)
            #expect(copy.properties.contentType == "application/json")
            #expect(copy.properties.messageId == jobId)
            #expect(copy.properties.persistent)
            #expect(copy.exchange == PipelineTopology.jobsExchange)
            #expect(copy.routingKey == PipelineTopology.jobRoutingKey)
            if case .success(let job) = Result(catching: { () throws(PaymentJob.DecodingError) in try PaymentJob.decode(copy.body) }) {
                #expect(job.jobId == jobId)
                #expect(job.amount.value == 1099)
            } else {
                Issue.record("the published body is not a valid job")
            }

            try TestServices.eventually("payment decrypted") { try harness.outcome(jobId)?.status == "decrypted" }
            #expect(try harness.base.depth(Stage.decrypt.deadLetterQueueName) == 0)
        }

        /// Published with the pika example, the documented edge cases land where docs/asyncapi.yaml says: a
        /// duplicate makes no second payment, the same jobId with other content and a message over 256 KiB are
        /// dead-lettered (`idempotency_conflict`, `message_too_large`), an invalid job is a failed payment.
        @Test func documentedEdgeCasesLandWhereTheContractSays() throws {
            let harness = try DecryptHarness()
            let runtime = try harness.startedRuntime()
            defer { runtime.stopAndWait() }
            let suffix = UUID().uuidString.prefix(8)
            let token = try JSONSerialization.jsonObject(with: Data(try harness.token()))
            func job(_ jobId: String, _ changes: [String: Any] = [:]) -> [String: Any] {
                ["jobId": jobId, "merchantId": SandboxEnvironment.merchantId, "orderReference": "order-1",
                 "amount": ["value": 1099, "currency": "GBP"], "applePayToken": token].merging(changes) { $1 }
            }
            func publish(_ object: [String: Any]) throws {
                let file = try Self.temporaryFile(Array(try JSONSerialization.data(withJSONObject: object)))
                defer { try? FileManager.default.removeItem(at: file) }
                let output = try Self.python([Self.packageRoot.appendingPathComponent("examples/publish_job.py").path,
                                              "--job", file.path, "--amqp-url", TestServices.amqpURL])
                try #require(output.status == 0, "\(output.text)")
            }
            let original = "edge-\(suffix)"
            try publish(job(original, ["unknownField": "ignored"]))
            try TestServices.eventually("decrypted") { try harness.outcome(original)?.status == "decrypted" }
            try publish(job(original, ["unknownField": "still ignored"]))                  // same contract content
            try publish(job(original, ["orderReference": "order-2"]))                      // same id, other content
            try publish(job("edge-big-\(suffix)", ["padding": String(repeating: "x", count: 270_000)]))
            try publish(job("edge-invalid-\(suffix)", ["orderReference": String(repeating: "r", count: 65)]))

            let dlq = Stage.decrypt.deadLetterQueueName
            try TestServices.eventually("two dead letters and the invalid job failed") {
                try harness.base.depth(dlq) == 2 && harness.outcome("edge-invalid-\(suffix)")?.status == "failed"
            }
            let codes = try harness.base.drain(dlq).compactMap { $0.properties.headers[DeliveryRouter.Header.errorCode]?.stringValue }
            #expect(codes.sorted() == ["idempotency_conflict", "message_too_large"])
            #expect(try harness.outcome("edge-invalid-\(suffix)")?.code == "invalid_job")
            #expect(try harness.outcome("edge-big-\(suffix)") == nil)
            #expect(try harness.outcome(original)?.status == "decrypted", "the first payment is untouched")
            let database = try TestServices.database()
            defer { database.close() }
            #expect(try database.query("SELECT 1 FROM payments WHERE job_id = $1", [original]).count == 1)
        }

        /// A job dead-lettered by the worker (unknown merchant) and one dead-lettered by the broker (x-death only)
        /// are listed, stay put while listed, and once the merchant exists `paypipe dlq replay decrypt` moves both
        /// back to paypipe.jobs, where they become decrypted payments and leave the DLQ empty.
        @Test func dlqReplayMovesDeadLettersBackToTheirOrigin() throws {
            try #require(FileManager.default.isExecutableFile(atPath: Self.paypipe), "build paypipe first: \(Self.paypipe)")
            let harness = try DecryptHarness()
            let runtime = try harness.startedRuntime()
            defer { runtime.stopAndWait() }
            let dlq = Stage.decrypt.deadLetterQueueName
            let merchant = "late-merchant"
            let workerDead = "dlq-worker-\(UUID().uuidString.prefix(8))"
            let brokerDead = "dlq-broker-\(UUID().uuidString.prefix(8))"

            let jobFile = try Self.temporaryFile(try harness.job(workerDead, token: harness.token(), merchantId: merchant))
            defer { try? FileManager.default.removeItem(at: jobFile) }
            let published = try Self.python([Self.packageRoot.appendingPathComponent("examples/publish_job.py").path,
                                             "--job", jobFile.path, "--amqp-url", TestServices.amqpURL])
            try #require(published.status == 0, "\(published.text)")
            try TestServices.eventually("dead-lettered") { try harness.base.depth(dlq) == 1 }
            let connection = try TestServices.amqp()
            defer { connection.close() }
            var properties = AMQPProperties(contentType: "application/json", messageId: brokerDead)
            properties.headers["x-death"] = .array([.table([
                "exchange": .string(PipelineTopology.jobsExchange), "routing-keys": .array([.string(PipelineTopology.jobRoutingKey)]),
                "queue": .string(Stage.decrypt.queueName), "reason": .string("delivery_limit"), "count": .int(1),
            ])])
            try connection.publish(AMQPOutboundMessage(
                exchange: "", routingKey: dlq, body: try harness.job(brokerDead, token: harness.token(), merchantId: merchant),
                properties: properties))
            try TestServices.eventually("two dead letters") { try harness.base.depth(dlq) == 2 }

            let list = try ChildProcess.runCapturingOutput(Self.paypipe, ["dlq", "list", "decrypt"], environment: Self.serviceEnvironment)
            #expect(list.status == 0, "\(list.text)")
            #expect(list.text.contains("\(dlq): 2 messages"), "\(list.text)")
            #expect(list.text.contains("\(workerDead)\tunknown_merchant"), "\(list.text)")
            #expect(list.text.contains("\(brokerDead)\tdelivery_limit"), "\(list.text)")
            try TestServices.eventually("listing requeued both") { try harness.base.depth(dlq) == 2 }

            var document = harness.sandbox.merchantDocument()
            document.id = merchant
            let database = try TestServices.database()
            defer { database.close() }
            try MerchantStore(vault: harness.vault).apply(document, baseDirectory: URL(fileURLWithPath: harness.sandbox.directory), deployment: .sandbox, on: database)

            let replay = try ChildProcess.runCapturingOutput(Self.paypipe, ["dlq", "replay", "decrypt"], environment: Self.serviceEnvironment)
            #expect(replay.status == 0, "\(replay.text)")
            #expect(replay.text.contains("replayed 2 messages from \(dlq)"), "\(replay.text)")
            try TestServices.eventually("both decrypted") {
                try harness.outcome(workerDead)?.status == "decrypted" && harness.outcome(brokerDead)?.status == "decrypted"
            }
            #expect(try harness.base.depth(dlq) == 0)

            let usage = try ChildProcess.runCapturingOutput(Self.paypipe, ["dlq", "replay", "nowhere"], environment: Self.serviceEnvironment)
            #expect(usage.status == 64, "\(usage.text)")
        }
        /// The four real worker processes, the gateway simulator and the webhook receiver (as scripts/demo runs them)
        /// take 20 sample jobs: every attributable job reaches the terminal status its kind implies, with exactly one
        /// verified webhook and one results-exchange event per payment; the two unattributable ones are dead-lettered.
        @Test func sampleJobsFlowThroughAllFourWorkerProcesses() throws {
            let stack = try PipelineProcesses()
            defer {
                stack.stop()
                stack.removeFiles()
            }
            let connection = try TestServices.amqp()
            let results = "contract-results-\(UUID().uuidString.prefix(8))"
            defer {
                _ = try? connection.deleteQueue(results)
                connection.close()
            }
            try connection.declareQueue(AMQPQueue(name: results, durable: false, arguments: ["x-expires": .int(300_000)]))
            try connection.bind(AMQPBinding(queue: results, exchange: PipelineTopology.resultsExchange, routingKey: "#"))

            let prefix = "e2e-\(UUID().uuidString.prefix(8))"
            // The sandbox merchant is on the webservices transport; four good jobs go to its jwt twin in the same run.
            let published = try stack.paypipe(["job", "publish", "--sample", "20", "--prefix", prefix, "--sandbox-dir", stack.sandboxDirectory])
                + "\n" + stack.paypipe(["job", "publish", "--sample", "4", "--all-good", "--merchant", SandboxEnvironment.jwtMerchantId,
                                        "--prefix", prefix + "-jwt", "--sandbox-dir", stack.sandboxDirectory])
            var kinds: [String: String] = [:]
            // A replayed token's job reuses the token of the last valid job published before it (SampleJobFactory).
            var replays: [(original: String, replay: String)] = []
            var lastValid: String?
            for line in published.split(separator: "\n") where line.hasPrefix("{") {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let jobId = try #require(object["jobId"] as? String)
                kinds[jobId] = object["kind"] as? String
                switch SampleJobFactory.Kind(rawValue: kinds[jobId] ?? "") {
                case .valid?: lastValid = jobId
                case .replayedToken?: if let original = lastValid { replays.append((original, jobId)) }
                default: break
                }
            }
            var expected: [String: String] = kinds.compactMapValues { kind in
                switch SampleJobFactory.Kind(rawValue: kind) {
                case .valid?, .validRSA?: "authorized"
                case .declined?: "declined"
                case .amountMismatch?, .invalidJob?, .replayedToken?: "failed"
                default: nil
                }
            }
            try #require(kinds.count == 24 && expected.count == 22, "\(published)")

            func firstWebhooks() -> [[String: Any]] { stack.verifiedWebhooks().filter { ($0["duplicate"] as? Bool) != true } }
            try TestServices.eventually(timeout: 120, "22 events and 22 webhooks") {
                try Int(connection.queueDeclarePassive(results).messages) >= expected.count && firstWebhooks().count >= expected.count
            }
            Thread.sleep(forTimeInterval: 1)   // anything extra (a duplicate) would arrive now

            let database = try TestServices.database()
            defer { database.close() }
            var paymentIds: [String: String] = [:]   // payment id (lowercase) -> job id
            let statuses = Dictionary(try database.query("SELECT job_id, status FROM payments WHERE job_id LIKE $1", [prefix + "-%"]).map {
                (try $0.decode("job_id", as: String.self), try $0.decode("status", as: String.self))
            }, uniquingKeysWith: { first, _ in first })
            // Two handler lanes decrypt in parallel, so either job of a replayed pair may claim the token first: exactly
            // one of the two is authorised and the other fails token_replayed, whichever came first.
            for pair in replays {
                let pairStatuses = [statuses[pair.original], statuses[pair.replay]].compactMap { $0 }
                #expect(pairStatuses.sorted() == ["authorized", "failed"], "\(pair): \(pairStatuses)")
                if statuses[pair.original] == "failed", statuses[pair.replay] == "authorized" {
                    (expected[pair.original], expected[pair.replay]) = ("failed", "authorized")
                }
            }
            for row in try database.query("SELECT id, job_id, status FROM payments WHERE job_id LIKE $1", [prefix + "-%"]) {
                let jobId = try row.decode("job_id", as: String.self)
                #expect(try row.decode("status", as: String.self) == expected[jobId], "\(jobId) (\(kinds[jobId] ?? "?"))")
                paymentIds[try row.decode("id", as: UUID.self).uuidString.lowercased()] = jobId
            }
            #expect(Set(paymentIds.values) == Set(expected.keys))
            let transports = try database.query(
                "SELECT m.config->'gateway'->>'transport' AS transport, count(*) AS n FROM payments p JOIN merchants m ON m.id = p.merchant_id WHERE p.job_id LIKE $1 AND p.status = 'authorized' GROUP BY 1",
                [prefix + "-%"]).map { (try $0.decode("transport", as: String.self), try $0.decode("n", as: Int64.self)) }
            #expect(Dictionary(uniqueKeysWithValues: transports)["jwt"] == 4, "the jwt merchant's payments are authorised over /jwt/")
            #expect((Dictionary(uniqueKeysWithValues: transports)["webservices"] ?? 0) > 0, "the webservices merchant's over /json/")

            var events: [String: Int] = [:]
            while let delivery = try connection.get(queue: results) {
                try connection.ack(deliveryTag: delivery.deliveryTag)
                let event = try #require(try JSONSerialization.jsonObject(with: Data(delivery.body)) as? [String: Any])
                let data = try #require(event["data"] as? [String: Any])
                let paymentId = try #require(data["paymentId"] as? String).lowercased()
                events[paymentId, default: 0] += 1
                #expect(delivery.routingKey == "payment." + (expected[paymentIds[paymentId] ?? ""] ?? "?"))
                #expect(delivery.properties.messageId == data["id"] as? String)
            }
            #expect(events.count == expected.count && events.values.allSatisfy { $0 == 1 }, "\(events)")
            #expect(Set(events.keys) == Set(paymentIds.keys))

            var webhooks: [String: Set<String>] = [:]
            for line in stack.verifiedWebhooks() {
                let paymentId = (line["paymentId"] as? String ?? "").lowercased()
                webhooks[paymentId, default: []].insert(line["webhookId"] as? String ?? "")
            }
            #expect(Set(webhooks.keys) == Set(paymentIds.keys))
            #expect(webhooks.values.allSatisfy { $0.count == 1 }, "one webhook id per payment: \(webhooks)")
            #expect(firstWebhooks().count == expected.count)
            #expect(try Int(connection.queueDeclarePassive(Stage.decrypt.deadLetterQueueName).messages) == 2)
        }
    }
}
