import AMQP
import Foundation
import JSON
import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

extension Integration {
    /// The tenant boundary on the real broker (docs/security.md "Tenant boundary"): the users and permissions of
    /// `scripts/broker-permissions` (the script the docs show, run here against the test broker), two merchants each with
    /// its own backend and results reader, and the five workers running as the worker user only.
    @Suite struct TenantBoundaryTests {
        static let script = PipelineProcesses.packageRoot.appendingPathComponent("scripts/broker-permissions").path
        static let merchantB = SandboxEnvironment.merchantId
        static let merchantA = "tenant-a"
        static let worker = "tenant-paypipe-worker"
        static let backendA = "tenant-backend-a", backendB = "tenant-backend-b"
        static let readerA = "tenant-reader-a", readerB = "tenant-reader-b"

        /// `rabbitmqctl` of the test broker, through scripts/services (its node name and environment).
        static func rabbitmqctl(_ arguments: [String]) throws -> ChildProcess.Output {
            try ChildProcess.runCapturingOutput("/bin/bash", [TestServices.servicesScript, "rabbitmqctl"] + arguments)
        }

        /// A fresh user with a random password, and its role's permissions from scripts/broker-permissions.
        static func createUser(_ name: String, role: [String]) throws -> String {
            _ = try rabbitmqctl(["delete_user", name])
            let password = UUID().uuidString
            let added = try rabbitmqctl(["add_user", name, password])
            guard added.status == 0 else { throw TestFailure("add_user \(name): \(added.text)") }
            let granted = try ChildProcess.runCapturingOutput("/bin/bash", [script] + role.prefix(1) + [name] + role.dropFirst(),
                                                              environment: ["RABBITMQCTL": "/bin/bash \(TestServices.servicesScript) rabbitmqctl"])
            guard granted.status == 0 else { throw TestFailure("broker-permissions \(role) \(name): \(granted.text)") }
            return url(user: name, password: password)
        }

        /// The test broker's URL with another user.
        static func url(user: String, password: String) -> String {
            var components = URLComponents(string: TestServices.amqpURL)!
            components.user = user
            components.password = password
            return components.string!
        }

        /// What a publish as `url` came to: nil when the broker confirmed it, else the channel's close code.
        static func publish(as url: String, exchange: String = PipelineTopology.jobsExchange, routingKey: String,
                            body: [UInt8], userId: String?) throws -> Int? {
            // A backend declares nothing (docs/job-contract.md): an empty topology.
            let publisher = AMQPPublisher(configuration: try AMQPConfiguration(url: url), topology: AMQPTopology())
            defer { publisher.close() }
            var properties = AMQPProperties(contentType: "application/json", persistent: true, timestamp: Date())
            properties.userId = userId
            do {
                try publisher.publish(AMQPOutboundMessage(exchange: exchange, routingKey: routingKey, body: body, properties: properties,
                                                          mandatory: exchange != PipelineTopology.resultsExchange), timeout: 20)
                return nil
            } catch .channelClosed(let code, _) {
                return code
            }
        }

        /// The channel close code of binding `queue` (declared first) to `paypipe.results` by `key` as `url`; nil: bound.
        static func bind(as url: String, queue: String, key: String) throws -> Int? {
            let connection = try AMQPConnection(configuration: try AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.declareQueue(AMQPQueue(name: queue, durable: false))
            do {
                try connection.bind(AMQPBinding(queue: queue, exchange: PipelineTopology.resultsExchange, routingKey: key))
                return nil
            } catch .channelClosed(let code, _) {
                return code
            }
        }

        /// Every message in `queue` (acked), as (routing key, body, dead-letter code).
        static func drain(_ queue: String, as url: String = TestServices.amqpURL) throws -> [(key: String, body: JSONValue, code: String?)] {
            let connection = try AMQPConnection(configuration: try AMQPConfiguration(url: url))
            defer { connection.close() }
            var messages: [(key: String, body: JSONValue, code: String?)] = []
            while let delivery = try connection.get(queue: queue) {
                try connection.ack(deliveryTag: delivery.deliveryTag)
                messages.append((delivery.routingKey, (try? JSONValue.parse(delivery.body)) ?? .null,
                                 delivery.properties.headers[DeliveryRouter.Header.errorCode]?.stringValue))
            }
            return messages
        }

        /// How many requests the gateway simulator has received.
        static func simRequests(_ stack: PipelineProcesses) throws -> Int {
            let port = try #require(stack.environment["PAYPIPE_SIM_PORT"])
            let response = try HTTPProbe.get("http://127.0.0.1:\(port)/_sim/requests")
            return try JSONValue.parse(response.body)["requests"]?.arrayValue?.count ?? -1
        }

        @Test func aBackendActsOnlyForItsOwnMerchants() throws {
            let started = Date()
            let workerURL = try Self.createUser(Self.worker, role: ["worker"])
            let backendA = try Self.createUser(Self.backendA, role: ["backend"])
            let backendB = try Self.createUser(Self.backendB, role: ["backend"])
            let readerA = try Self.createUser(Self.readerA, role: ["reader", Self.merchantA])
            let readerB = try Self.createUser(Self.readerB, role: ["reader", Self.merchantB])
            // The workers run as the worker user, nothing else; merchant changes are seen at once.
            let workerEnvironment = ["PAYPIPE_AMQP_URL": workerURL, "PAYPIPE_MERCHANT_CACHE_TTL": "0"]
            let workers = PipelineProcesses.workers
            let stack = try PipelineProcesses(processEnvironment: Dictionary(uniqueKeysWithValues: workers.map { ($0, workerEnvironment) }),
                                              workers: workers)
            defer { stack.stop(); stack.removeFiles() }

            // Merchant B is the sandbox merchant, merchant A a copy of it; each lists its own backend.
            let documentPath = stack.sandboxDirectory + "/merchant.json"
            var document = try JSONValue.parse(Array(try Data(contentsOf: URL(fileURLWithPath: documentPath))))
            for (id, backend) in [(Self.merchantB, Self.backendB), (Self.merchantA, Self.backendA)] {
                document.set(.string(id), forKey: "id")
                document.set(.array([.string(backend)]), forKey: "publishers")
                let path = stack.sandboxDirectory + "/merchant-\(id).json"
                #expect(FileManager.default.createFile(atPath: path, contents: Data(document.serialized()), attributes: [.posixPermissions: 0o600]))
                let shown = try stack.paypipe(["merchant", "apply", "--file", path])
                #expect(shown.contains("\"publishers\""), "merchant show prints publishers: \(shown)")
            }

            // merchant apply refuses a publishers value of another type, naming the field.
            var wrong = document
            wrong.set(.integer(42), forKey: "publishers")
            let wrongPath = stack.sandboxDirectory + "/merchant-wrong.json"
            #expect(FileManager.default.createFile(atPath: wrongPath, contents: Data(wrong.serialized()), attributes: [.posixPermissions: 0o600]))
            let refused = try ChildProcess.runCapturingOutput(PipelineProcesses.binary("paypipe"), ["merchant", "apply", "--file", wrongPath],
                                                              environment: stack.environment)
            #expect(refused.status != 0 && refused.text.contains("publishers must be an array of broker user names"), "\(refused.status): \(refused.text)")

            // Queues left by an earlier run go first (their messages would count).
            let queueA = "\(Self.readerA).results", queueB = "\(Self.readerB).results", legacy = "tenant-legacy-results"
            let admin = try TestServices.amqp()
            for queue in [queueA, queueB, legacy] { _ = try? admin.deleteQueue(queue) }
            admin.close()
            // Readers: each may bind to its own merchant's key only; an existing reader's event-type bindings still work.
            #expect(try Self.bind(as: readerA, queue: queueA, key: "payment.*.\(Self.merchantA)") == nil)
            #expect(try Self.bind(as: readerB, queue: queueB, key: "payment.*.\(Self.merchantB)") == nil)
            for key in ["payment.*.\(Self.merchantB)", "payment.authorized.\(Self.merchantB)", "#", "payment.#", "payment.authorized", "#.\(Self.merchantB)"] {
                #expect(try Self.bind(as: readerA, queue: queueA, key: key) == 403, "reader A bound \(key)")
            }
            #expect(try Self.bind(as: TestServices.amqpURL, queue: legacy, key: "payment.authorized") == nil)
            #expect(try Self.bind(as: TestServices.amqpURL, queue: legacy, key: "payment.#") == nil)

            // Backend B's payment for merchant B is authorised, by workers running as the worker user.
            let sandbox = try SandboxEnvironment.open(directory: stack.sandboxDirectory)
            let jobB = "tenant-b-\(UUID().uuidString.prefix(8))"
            #expect(try Self.publish(as: backendB, routingKey: PipelineTopology.jobRoutingKey,
                                     body: SandboxEnvironment.jobBody(jobB, token: sandbox.mintJobToken()), userId: Self.backendB) == nil)
            let database = try TestServices.database()
            defer { database.close() }
            func payment(_ jobId: String) throws -> (status: String, stage: String)? {
                try database.query("SELECT status, stage FROM payments WHERE merchant_id = $1 AND job_id = $2", [Self.merchantB, jobId]).first
                    .map { (try $0.decode("status", as: String.self), try $0.decode("stage", as: String.self)) }
            }
            try TestServices.eventually(timeout: 60, "merchant B's payment authorized and notified") {
                try payment(jobB).map { $0.status == "authorized" && $0.stage == "done" } ?? false
            }
            try TestServices.eventually(timeout: 10, "merchant B's result routed to reader B") { try Self.drain(queueB, as: readerB).count == 1 }
            #expect(try Self.drain(queueA, as: readerA).isEmpty, "reader A received merchant B's result")
            try TestServices.eventually(timeout: 10, "the legacy binding's copy") { try Self.drain(legacy).count == 1 }

            // Backend A's refund of merchant B's payment: dead-lettered, never at the gateway, nothing recorded.
            let callsBefore = try Self.simRequests(stack)
            let refund = "tenant-refund-\(UUID().uuidString.prefix(8))"
            let refundBody = JSONValue.object([("operationId", .string(refund)), ("merchantId", .string(Self.merchantB)), ("jobId", .string(jobB))]).serialized()
            #expect(try Self.publish(as: backendA, routingKey: "payment.refund.requested", body: refundBody, userId: Self.backendA) == nil)
            func operations() throws -> Int {
                try database.query("SELECT count(*)::bigint AS n FROM payment_operations WHERE merchant_id = $1", [Self.merchantB])[0].decode("n", as: Int.self)
            }
            var refundDeadLetters: [(key: String, body: JSONValue, code: String?)] = []
            try TestServices.eventually(timeout: 30, "the refund dead-lettered, or recorded") {
                refundDeadLetters += try Self.drain(Stage.operations.name.deadLetterQueueName)
                let recorded = try operations()
                return !refundDeadLetters.isEmpty || recorded > 0
            }
            #expect(refundDeadLetters.map(\.code) == [PublisherRule.code])
            #expect(refundDeadLetters.first?.body["operationId"]?.stringValue == refund)
            #expect(try operations() == 0, "an operation of merchant B was recorded for backend A's refund")
            #expect(try Self.simRequests(stack) == callsBefore, "the gateway was called for backend A's refund")
            #expect(try payment(jobB)?.status == "authorized")

            // Backend A's payment job for merchant B: dead-lettered, no payment.
            let jobA = "tenant-a-for-b-\(UUID().uuidString.prefix(8))"
            #expect(try Self.publish(as: backendA, routingKey: PipelineTopology.jobRoutingKey,
                                     body: SandboxEnvironment.jobBody(jobA, token: sandbox.mintJobToken()), userId: Self.backendA) == nil)
            var jobDeadLetters: [(key: String, body: JSONValue, code: String?)] = []
            try TestServices.eventually(timeout: 30, "the payment job dead-lettered, or recorded") {
                jobDeadLetters += try Self.drain(Stage.decrypt.name.deadLetterQueueName)
                let recorded = try payment(jobA)
                return !jobDeadLetters.isEmpty || recorded != nil
            }
            #expect(jobDeadLetters.map(\.code) == [PublisherRule.code])
            #expect(try payment(jobA) == nil, "a payment of merchant B was recorded for backend A's job")

            // The broker's side: a forged user_id, and every destination but paypipe.jobs, are refused to a backend.
            #expect(try Self.publish(as: backendA, routingKey: PipelineTopology.jobRoutingKey,
                                     body: SandboxEnvironment.jobBody("forged", token: sandbox.mintJobToken()), userId: Self.backendB) == 406)
            #expect(try Self.publish(as: backendA, exchange: "", routingKey: Stage.decrypt.name.queueName, body: [], userId: nil) == 403)
            #expect(try Self.publish(as: backendA, exchange: PipelineTopology.stagesExchange, routingKey: "authorize", body: [], userId: nil) == 403)
            #expect(try Self.publish(as: backendA, exchange: PipelineTopology.resultsExchange, routingKey: "payment.authorized", body: [], userId: nil) == 403)

            // The workers are connected as the worker user (the only credential they were given): each holds at
            // least a consumer and a publisher connection.
            let users = try Self.rabbitmqctl(["list_connections", "-q", "user"]).text.split(separator: "\n")
                .map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(users.filter { $0 == Self.worker }.count >= 2 * workers.count, "\(users)")
            print("TenantBoundaryTests took \(Int(Date().timeIntervalSince(started)))s")
        }
    }
}
