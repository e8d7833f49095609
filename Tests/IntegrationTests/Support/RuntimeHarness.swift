import AMQP
import Foundation
import PaymentStages
import Pipeline
import Postgres

/// Sets up a clean broker and database with payments waiting in the authorize stage, and runs
/// ``StageRuntime`` over ``AdvanceStage`` against them.
struct RuntimeHarness {
    static let retrySchedule = RetrySchedule(delays: [0.3], maxRetries: 2)
    let configuration: WorkerConfiguration
    let logSink = LogSink(capturing: ())
    let stage = AdvanceStage()

    init(extra: [String: String] = [:]) throws {
        configuration = try WorkerConfiguration(stage: .authorize, environment: EnvironmentReader([
            "PAYPIPE_ENV": "sandbox", "PAYPIPE_AMQP_URL": TestServices.amqpURL, "PAYPIPE_DATABASE_URL": TestServices.databaseURL,
            "PAYPIPE_METRICS_PORT": "0", "PAYPIPE_METRICS_HOST": "127.0.0.1", "PAYPIPE_RETRY_DELAYS": "300ms",
            "PAYPIPE_MAX_RETRIES": "2", "PAYPIPE_PREFETCH": "50", "PAYPIPE_BATCH_SIZE": "20",
            "PAYPIPE_HEARTBEAT_SECONDS": "4", "PAYPIPE_RECONCILE_INTERVAL": "0", "PAYPIPE_SHUTDOWN_TIMEOUT": "20s",
        ].merging(extra) { $1 }))
        try TestServices.resetDatabase()
        try TestServices.resetBroker(retrySchedule: configuration.retrySchedule)
        let database = try TestServices.database()
        defer { database.close() }
        try database.query("INSERT INTO merchants (id) VALUES ('m1')")
    }

    func makeRuntime(hooks: RuntimeHooks = .none) throws -> StageRuntime<AdvanceStage> {
        try StageRuntime(handler: stage, configuration: configuration,
                         logger: Logger(component: "authorize", threshold: .debug, sink: logSink), hooks: hooks,
                         components: ReconcilerComponent.components(for: stage))
    }

    func startedRuntime(hooks: RuntimeHooks = .none) throws -> StageRuntime<AdvanceStage> {
        let runtime = try makeRuntime(hooks: hooks)
        try runtime.start()
        return runtime
    }

    /// Inserts `count` payments in status `decrypted` and returns their hand-off messages.
    func makePayments(_ count: Int) throws -> [StageMessage] {
        let database = try TestServices.database()
        defer { database.close() }
        return try (0..<count).map { index in
            let id = UUID()
            let jobId = "job-\(index)-\(id.uuidString.prefix(8))"
            try database.query(
                """
                INSERT INTO payments (id, merchant_id, job_id, job_hash, status, stage, first_received_at, amount_minor, currency)
                VALUES ($1, 'm1', $2, $3, 'decrypted', 'authorize', now(), 1000, 'GBP')
                """, [id, jobId, Array(jobId.utf8)])
            return StageMessage(paymentId: id, merchantId: "m1", jobId: jobId)
        }
    }

    /// Publishes raw bodies to the authorize stage, as an upstream stage would (or, with `exchange: ""` and the queue
    /// name as routing key, straight into the queue as any publisher with access to the default exchange could).
    func publish(_ bodies: [[UInt8]], exchange: String = PipelineTopology.stagesExchange, routingKey: String = "authorize",
                 headers: [String: AMQPFieldValue] = [:], declaring: Bool = true) throws {
        let topology = declaring ? PipelineTopology.topology(retrySchedule: configuration.retrySchedule) : AMQPTopology()
        let publisher = AMQPPublisher(configuration: try AMQPConfiguration(url: TestServices.amqpURL), topology: topology)
        defer { publisher.close() }
        var properties = AMQPProperties()
        properties.contentType = "application/json"
        properties.headers = headers
        try publisher.publish(bodies.map {
            AMQPOutboundMessage(exchange: exchange, routingKey: routingKey, body: $0, properties: properties, mandatory: true)
        }, timeout: 30)
    }

    /// `declaring: false` leaves the broker's topology as it is (a test that deleted a queue keeps it deleted).
    func publish(_ messages: [StageMessage], declaring: Bool = true) throws {
        try publish(messages.map { $0.encoded() }, declaring: declaring)
    }

    func statuses() throws -> [String: Int] {
        let database = try TestServices.database()
        defer { database.close() }
        var counts: [String: Int] = [:]
        for row in try database.query("SELECT status, count(*)::bigint AS n FROM payments GROUP BY status") {
            counts[try row.decode("status", as: String.self)] = Int(try row.decode("n", as: Int64.self))
        }
        return counts
    }

    /// Audit events of the `decrypted → prepared` transition: exactly one per payment means no double effect.
    func advanceEvents() throws -> Int {
        let database = try TestServices.database()
        defer { database.close() }
        let row = try database.query("SELECT count(*)::bigint AS n FROM payment_events WHERE from_status = 'decrypted' AND to_status = 'prepared'")
        return Int(try row[0].decode("n", as: Int64.self))
    }

    /// Drains `queue` with basic.get and returns the messages.
    func drain(_ queue: String) throws -> [AMQPDelivery] {
        let connection = try TestServices.amqp()
        defer { connection.close() }
        return try connection.drain(queue)
    }

    func depth(_ queue: String) throws -> Int {
        let connection = try TestServices.amqp()
        defer { connection.close() }
        return Int(try connection.queueDeclarePassive(queue).messages)
    }
}

/// A payment stage like the production ones: the payments' reconciler runs next to it.
extension AdvanceStage: ReconcilingStage {}

extension StageRuntime {
    /// SIGTERM's path in tests: stop taking work, drain, close.
    func stopAndWait() {
        requestStop()
        waitUntilStopped()
    }
}

extension AMQPConnection {
    /// Takes every message of `queue` with basic.get, acking each, and returns them.
    func drain(_ queue: String) throws -> [AMQPDelivery] {
        var deliveries: [AMQPDelivery] = []
        while let delivery = try get(queue: queue) {
            try ack(deliveryTag: delivery.deliveryTag)
            deliveries.append(delivery)
        }
        return deliveries
    }
}
