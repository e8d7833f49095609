import AMQP
import Crypto
import Foundation
import PaymentStages
import Pipeline
import Postgres

/// The real notify stage on the real services, isolated from other suites: its own freshly migrated database and its
/// own RabbitMQ virtual host (`paypipe_notify_test`), because the pipeline's queue names are fixed and other suites
/// (and other helpers' test runs) use `paypipe.notify` on `/`. The vhost is created once with
/// `scripts/services rabbitmqctl add_vhost` (no restart) if it does not exist.
struct NotifyHarness {
    static let vhost = "paypipe_notify_test"
    static let retryDelays = "300ms"
    static let secret = "whsec_" + Data((1...32).map { UInt8($0) }).base64EncodedString()

    let databaseName = "paypipe_notify_\(UUID().uuidString.prefix(8).lowercased())"
    let databaseURL: String
    let amqpURL: String
    let configuration: WorkerConfiguration
    let logSink = LogSink(capturing: ())
    let vault: DataVault
    /// The data key behind `vault`, base64, for worker processes (`PAYPIPE_DATA_KEY`).
    let dataKeyBase64: String
    let resultsQueue = "notify-test-results-\(UUID().uuidString.prefix(8).lowercased())"

    /// `extra` overrides or adds worker environment (`PAYPIPE_RECONCILE_INTERVAL` for tests of the upkeep's gauges).
    init(maxRetries: Int = 3, concurrency: Int = 2, extra: [String: String] = [:]) throws {
        guard var database = URLComponents(string: TestServices.databaseURL), var broker = URLComponents(string: TestServices.amqpURL) else {
            throw TestFailure("test service URLs are not URLs")
        }
        database.path = "/" + databaseName
        databaseURL = database.string!
        broker.percentEncodedPath = "/" + Self.vhost
        amqpURL = broker.string!
        let admin = try TestServices.database()
        defer { admin.close() }
        try admin.simpleQuery("CREATE DATABASE \(databaseName)")
        let connection = try PostgresConnection(configuration: try PostgresConfiguration(url: databaseURL))
        defer { connection.close() }
        _ = try Migrator(migrations: PayPipeSchema.migrations, lockKey: PayPipeSchema.migrationLockKey).apply(on: connection)

        configuration = try WorkerConfiguration(stage: .notify, environment: EnvironmentReader([
            "PAYPIPE_ENV": "sandbox", "PAYPIPE_AMQP_URL": amqpURL, "PAYPIPE_DATABASE_URL": databaseURL,
            "PAYPIPE_METRICS_PORT": "0", "PAYPIPE_METRICS_HOST": "127.0.0.1", "PAYPIPE_RETRY_DELAYS": Self.retryDelays,
            "PAYPIPE_MAX_RETRIES": String(maxRetries), "PAYPIPE_PREFETCH": "20", "PAYPIPE_CONCURRENCY": String(concurrency), "PAYPIPE_BATCH_SIZE": "5",
            "PAYPIPE_HEARTBEAT_SECONDS": "4", "PAYPIPE_RECONCILE_INTERVAL": "0", "PAYPIPE_SHUTDOWN_TIMEOUT": "20s",
        ].merging(extra) { $1 }))
        let keyBytes = SecureRandom.bytes(count: 32)
        dataKeyBase64 = Data(keyBytes).base64EncodedString()
        vault = DataVault(keyring: DataKeyring(current: try DataKey(bytes: keyBytes)))
        let amqp = try Self.connectVhost(amqpURL)
        defer { amqp.close() }
        let topology = PipelineTopology.topology(retrySchedule: configuration.retrySchedule)
        for queue in topology.queues where queue.name.hasPrefix("paypipe.notify") {
            _ = try amqp.deleteQueue(queue.name)
        }
        try amqp.declare(topology)
        try amqp.declare(AMQPTopology(
            queues: [AMQPQueue(name: resultsQueue, durable: false)],
            bindings: [AMQPBinding(queue: resultsQueue, exchange: PipelineTopology.resultsExchange, routingKey: "#")]))
    }

    private static func connectVhost(_ url: String) throws -> AMQPConnection {
        if let connection = try? AMQPConnection(configuration: try AMQPConfiguration(url: url)) { return connection }
        try TestServices.services("rabbitmqctl", "add_vhost", vhost)
        try TestServices.services("rabbitmqctl", "set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
        return try AMQPConnection(configuration: try AMQPConfiguration(url: url))
    }

    func amqp() throws -> AMQPConnection {
        try AMQPConnection(configuration: try AMQPConfiguration(url: amqpURL))
    }

    func tearDown() {
        if let amqp = try? amqp() {
            _ = try? amqp.deleteQueue(resultsQueue)
            amqp.close()
        }
        guard let admin = try? TestServices.database() else { return }
        defer { admin.close() }
        try? admin.simpleQuery("DROP DATABASE IF EXISTS \(databaseName) WITH (FORCE)")
    }

    func database() throws -> PostgresConnection {
        try PostgresConnection(configuration: try PostgresConfiguration(url: databaseURL))
    }

    /// `urlGuard` replaces the one `allowPrivate` makes (a test resolver, say).
    /// `gate`, `healthPolicy` and `rate` as ``NotifyStage/init`` takes them (endpoint health and rate tests).
    func makeStage(allowPrivate: Bool = true, urlGuard: WebhookURLGuard? = nil, gate: EndpointGate = EndpointGate(policy: EndpointGatePolicy(), stage: .notify),
                   healthPolicy: EndpointHealthPolicy = EndpointHealthPolicy(), rate: Double? = nil, totalTimeout: Double = 5,
                   resultsTiming: ResultsTiming = PaymentSettings.resultsTiming.defaultValue) -> NotifyStage {
        NotifyStage(
            directory: MerchantDirectory(store: MerchantStore(vault: vault), ttl: 0),
            urlGuard: urlGuard ?? WebhookURLGuard(allowPrivate: allowPrivate), retrySchedule: configuration.retrySchedule,
            httpConfiguration: .init(connectTimeout: 2, totalTimeout: totalTimeout), gate: gate, healthPolicy: healthPolicy, rate: rate,
            logger: Logger(component: "notify", threshold: .debug, sink: logSink), resultsTiming: resultsTiming)
    }

    func startedRuntime(allowPrivate: Bool = true, urlGuard: WebhookURLGuard? = nil, hooks: RuntimeHooks = .none) throws -> StageRuntime<NotifyStage> {
        try startedRuntime(makeStage(allowPrivate: allowPrivate, urlGuard: urlGuard), hooks: hooks)
    }

    func startedRuntime(_ stage: NotifyStage, hooks: RuntimeHooks = .none) throws -> StageRuntime<NotifyStage> {
        let runtime = try StageRuntime(handler: stage, configuration: configuration,
                                       logger: Logger(component: "notify", threshold: .debug, sink: logSink), hooks: hooks,
                                       components: ReconcilerComponent.components(for: stage))
        try runtime.start()
        return runtime
    }

    // MARK: Data

    /// Applies the merchant as an operator would: the sandbox document's shape with `webhookURL` and the test secret.
    func applyMerchant(_ id: String = "m-notify", webhookURL: String?, secret: String = secret, previousSecrets: [String] = [],
                       ratePerSecond: Double? = nil) throws {
        var json: [String: Any] = ["id": id, "identities": [Any]()]
        json["webhook"] = webhookURL.map { url -> [String: Any] in
            var webhook: [String: Any] = ["url": url, "secret": secret, "previousSecrets": previousSecrets]
            webhook["ratePerSecond"] = ratePerSecond
            return webhook
        }
        let document = try JSONDecoder().decode(MerchantDocument.self, from: try JSONSerialization.data(withJSONObject: json))
        let database = try database()
        defer { database.close() }
        try MerchantStore(vault: vault).apply(document, baseDirectory: nil, deployment: .sandbox, on: database)
    }

    /// The merchant's endpoint answering `status` to every request (until re-scripted), applied as its webhook URL.
    func appliedReceiver(answering status: Int) throws -> WebhookTestReceiver {
        let receiver = try WebhookTestReceiver(secret: Self.secret)
        receiver.script([], then: status)
        do {
            try applyMerchant(webhookURL: receiver.url)
        } catch {
            receiver.stop()
            throw error
        }
        return receiver
    }

    /// Inserts a payment already in a terminal status, queued for notification, with a completed gateway attempt.
    func insertPayment(merchantId: String = "m-notify", status: PaymentStatus = .authorized, notifyURL: String? = nil) throws -> StageMessage {
        let id = UUID()
        let jobId = "job-\(id.uuidString.prefix(8))"
        let database = try database()
        defer { database.close() }
        try database.query(
            """
            INSERT INTO payments (id, merchant_id, job_id, job_hash, order_reference, amount_minor, currency, status, stage,
                                  first_received_at, notify_url, metadata)
            VALUES ($1, $2, $3, $4, 'ORDER-1', 1050, 'GBP', $5, 'notify', now(), $6, '{"cart":"c-1"}'::jsonb)
            """, [id, merchantId, jobId, Array(jobId.utf8), status.rawValue, notifyURL])
        // The audit event the submit stage would have written; set up directly, as the payment row is.
        try database.query(
            "INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor) VALUES ($1, $2, $3, $4, 'test')",
            [id, PaymentStatus.submitting.rawValue, status.rawValue, Stage.notify.rawValue])
        try database.query(
            """
            INSERT INTO gateway_attempts (payment_id, order_reference, request_type, state, outcome, error_code, error_message,
                                          transaction_reference, settle_status, masked_pan)
            VALUES ($1, 'ORDER-1', 'AUTH', 'completed', 'authorized', '0', 'Ok', '1-2-346', '0', '411111######4242')
            """, [id])
        return StageMessage(paymentId: id, merchantId: merchantId, jobId: jobId)
    }

    /// Runs `paypipe ARGS` against this harness's database and vhost, with the harness's retry delays: the CLI's
    /// topology (`paypipe stats` checks every retry queue) must be the one `init` declared, not the default one, which
    /// this vhost holds only if another test happened to declare it first.
    func paypipe(_ arguments: [String]) throws -> ChildProcess.Output {
        try ChildProcess.runCapturingOutput(PipelineProcesses.binary("paypipe"), arguments, environment: [
            "PAYPIPE_ENV": "sandbox", "PAYPIPE_DATABASE_URL": databaseURL, "PAYPIPE_AMQP_URL": amqpURL,
            "PAYPIPE_RETRY_DELAYS": Self.retryDelays,
        ])
    }

    func publish(_ messages: [StageMessage]) throws {
        let publisher = AMQPPublisher(configuration: try AMQPConfiguration(url: amqpURL),
                                      topology: PipelineTopology.topology(retrySchedule: configuration.retrySchedule))
        defer { publisher.close() }
        try publisher.publish(messages.map { WebhookReplay().handOff($0) }, timeout: 30)
    }

    func stage(of id: UUID) throws -> PaymentStage? {
        let database = try database()
        defer { database.close() }
        return try PaymentStore().load(id, on: database)?.stage
    }

    func deliveries(_ id: UUID) throws -> [WebhookDeliveryRecord] {
        let database = try database()
        defer { database.close() }
        return try WebhookDeliveryStore().list(paymentId: id, on: database).reversed()
    }

    func merchant(_ id: String = "m-notify") throws -> MerchantStore.Merchant? {
        let database = try database()
        defer { database.close() }
        return try MerchantStore(vault: vault).load(id, on: database)
    }

    /// Drains `queue` (acking) and returns its messages.
    func drain(_ queue: String) throws -> [AMQPDelivery] {
        let connection = try amqp()
        defer { connection.close() }
        return try connection.drain(queue)
    }

    /// Collects the results queue until `done` holds for what arrived so far: notify publishes a payment's results
    /// event after it commits the payment's `done`, so a single drain after ``waitDone(_:timeout:)`` can come too early.
    func results(_ what: String, until done: ([AMQPDelivery]) -> Bool) throws -> [AMQPDelivery] {
        var seen: [AMQPDelivery] = []
        try TestServices.eventually(timeout: 30, what) {
            seen += try drain(resultsQueue)
            return done(seen)
        }
        return seen
    }

    /// The results queue once it holds at least `count` messages.
    func results(count: Int) throws -> [AMQPDelivery] {
        try results("\(count) results events") { $0.count >= count }
    }

    /// Waits until the payment's stage is `done`.
    func waitDone(_ id: UUID, timeout: Double = 20) throws {
        try TestServices.eventually(timeout: timeout, "payment \(id) done") { try stage(of: id) == .done }
    }
}
