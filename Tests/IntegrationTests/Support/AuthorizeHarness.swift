import AMQP
import ApplePay
import ApplePaySandbox
import Crypto
import Foundation
import PaymentStages
import Pipeline
import Postgres

/// The real authorize stage on the real services: its own freshly migrated database (so it neither depends on nor
/// disturbs other suites' `paypipe_test` contents), merchants applied through ``MerchantStore``, card data saved
/// through ``CardDataStore``, and a ``StageRuntime`` over ``AuthorizeStage``.
///
/// The pipeline's queue names are fixed, so the broker is shared: queues are declared, never deleted, and hand-offs
/// are picked out by payment id (other messages are left for their owners).
struct AuthorizeHarness {
    static let jwtSecret = "authorize-harness-secret-not-real"
    /// Built claims carry this `iat`, so stored requests can be compared with the builder's output byte for byte.
    static let issuedAt = Date(timeIntervalSince1970: 1_767_225_600)
    /// One sandbox PKI per test process (RSA key generation is slow).
    static let pki: SandboxPKI = try! SandboxPKI.generate()

    let databaseName = "paypipe_authz_\(UUID().uuidString.prefix(8).lowercased())"
    let databaseURL: String
    let configuration: WorkerConfiguration
    let logSink = LogSink(capturing: ())
    let vault: DataVault
    /// The data key as `PAYPIPE_DATA_KEY` takes it, for worker processes sharing this database.
    let dataKeyBase64: String
    let cardData: CardDataStore
    let requests: GatewayRequestStore

    init() throws {
        guard var components = URLComponents(string: TestServices.databaseURL) else {
            throw TestFailure("PAYPIPE_TEST_DATABASE_URL is not a URL")
        }
        components.path = "/" + databaseName
        databaseURL = components.string!
        let admin = try TestServices.database()
        defer { admin.close() }
        try admin.simpleQuery("CREATE DATABASE \(databaseName)")
        let database = try PostgresConnection(configuration: try PostgresConfiguration(url: databaseURL))
        defer { database.close() }
        _ = try Migrator(migrations: PayPipeSchema.migrations, lockKey: PayPipeSchema.migrationLockKey).apply(on: database)

        configuration = try WorkerConfiguration(stage: .authorize, environment: EnvironmentReader([
            "PAYPIPE_ENV": "sandbox", "PAYPIPE_AMQP_URL": TestServices.amqpURL, "PAYPIPE_DATABASE_URL": databaseURL,
            "PAYPIPE_METRICS_PORT": "0", "PAYPIPE_METRICS_HOST": "127.0.0.1", "PAYPIPE_RETRY_DELAYS": "300ms",
            "PAYPIPE_MAX_RETRIES": "2", "PAYPIPE_PREFETCH": "50", "PAYPIPE_BATCH_SIZE": "20",
            "PAYPIPE_HEARTBEAT_SECONDS": "4", "PAYPIPE_RECONCILE_INTERVAL": "0", "PAYPIPE_SHUTDOWN_TIMEOUT": "20s",
        ]))
        let keyBytes = SecureRandom.bytes(count: 32)
        dataKeyBase64 = Data(keyBytes).base64EncodedString()
        vault = DataVault(keyring: DataKeyring(current: try DataKey(bytes: keyBytes)))
        cardData = CardDataStore(vault: vault)
        requests = GatewayRequestStore(vault: vault)
        let broker = try TestServices.amqp()
        defer { broker.close() }
        try broker.declare(PipelineTopology.topology(retrySchedule: configuration.retrySchedule))
    }

    /// Drops the database (after the runtime has stopped).
    func tearDown() {
        guard let admin = try? TestServices.database() else { return }
        defer { admin.close() }
        try? admin.simpleQuery("DROP DATABASE IF EXISTS \(databaseName) WITH (FORCE)")
    }

    func database() throws -> PostgresConnection {
        try PostgresConnection(configuration: try PostgresConfiguration(url: databaseURL))
    }

    func makeStage() -> AuthorizeStage {
        AuthorizeStage(
            directory: MerchantDirectory(store: MerchantStore(vault: vault), ttl: 0), cardData: cardData, requests: requests,
            clock: { Self.issuedAt })
    }

    func startedRuntime() throws -> StageRuntime<AuthorizeStage> {
        let stage = makeStage()
        let runtime = try StageRuntime(handler: stage, configuration: configuration,
                                       logger: Logger(component: "authorize", threshold: .debug, sink: logSink),
                                       components: ReconcilerComponent.components(for: stage))
        try runtime.start()
        return runtime
    }

    // MARK: Merchants

    /// Applies a merchant document, written as an operator would (`paypipe merchant apply --file`).
    /// `identity` adds a sandbox EC payment-processing identity (required in merchant-decrypts mode).
    /// `webhook`: the merchant document's (`url`, `secret`), for tests that run notify too.
    func applyMerchant(_ id: String, gateway: [String: Any]?, identity: Bool, webhook: [String: Any]? = nil) throws {
        var document: [String: Any] = ["id": id, "appleMerchantIdentifier": "merchant.com.paypipe.\(id)", "identities": []]
        document["webhook"] = webhook
        if identity {
            let merchant = try Self.pki.merchant("merchant.com.paypipe.\(id)", keyType: .ec)
            document["identities"] = [["certificatePem": merchant.certificatePEM, "privateKeyPem": merchant.privateKeyPEM]]
        }
        document["gateway"] = gateway
        let decoded = try JSONDecoder().decode(MerchantDocument.self, from: try JSONSerialization.data(withJSONObject: document))
        let database = try database()
        defer { database.close() }
        try MerchantStore(vault: vault).apply(decoded, baseDirectory: nil, deployment: .sandbox, on: database)
    }

    func merchant(_ id: String) throws -> MerchantStore.Merchant? {
        let database = try database()
        defer { database.close() }
        return try MerchantStore(vault: vault).load(id, on: database)
    }

    static func gateway(mode: String, requestTypes: [String]? = nil, secret: String? = jwtSecret) -> [String: Any] {
        var gateway: [String: Any] = [
            "type": "trustpayments", "baseUrl": "https://webservices.securetrading.net", "siteReference": "test_site12345",
            "jwtUsername": "jwt.paypipe.test", "mode": mode,
        ]
        gateway["requestTypes"] = requestTypes
        gateway["jwtSecret"] = secret
        return gateway
    }

    // MARK: Payments

    /// Inserts a payment in status `decrypted` (as the decrypt stage leaves it) and, when given, its card data.
    func insertPayment(
        merchantId: String, amount: Int64?, currency: String?, orderReference: String?, data: StoredPaymentData?
    ) throws -> StageMessage {
        let id = UUID()
        let jobId = "job-\(id.uuidString.prefix(8))"
        let database = try database()
        defer { database.close() }
        try database.query(
            """
            INSERT INTO payments (id, merchant_id, job_id, job_hash, order_reference, amount_minor, currency, status, stage, first_received_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, 'decrypted', 'authorize', now())
            """, [id, merchantId, jobId, Array(jobId.utf8), orderReference, amount, currency])
        if let data { try cardData.save(data, for: id, on: database) }
        return StageMessage(paymentId: id, merchantId: merchantId, jobId: jobId)
    }

    func payment(_ id: UUID) throws -> PaymentRecord? {
        let database = try database()
        defer { database.close() }
        return try PaymentStore().load(id, on: database)
    }

    /// Raw `gateway_requests` columns (nil if no row).
    func requestRow(_ id: UUID) throws -> (orderReference: String, requestTypes: String, ciphertext: [UInt8])? {
        let database = try database()
        defer { database.close() }
        let rows = try database.query(
            "SELECT order_reference, array_to_string(request_types, ',') AS types, ciphertext FROM gateway_requests WHERE payment_id = $1", [id])
        guard let row = rows.first else { return nil }
        return (try row.decode("order_reference", as: String.self), try row.decode("types", as: String.self),
                try row.decode("ciphertext", as: [UInt8].self))
    }

    /// Whether the payment's card data is still held (a `card_data` row with ciphertext).
    func cardDataHeld(_ id: UUID) throws -> Bool {
        let database = try database()
        defer { database.close() }
        return try !database.query("SELECT 1 FROM card_data WHERE payment_id = $1 AND ciphertext IS NOT NULL", [id]).isEmpty
    }

    func storedRequest(_ id: UUID) throws -> GatewayRequest? {
        let database = try database()
        defer { database.close() }
        return try requests.load(id, on: database)
    }

    func events(_ id: UUID) throws -> [String] {
        let database = try database()
        defer { database.close() }
        return try database.query("SELECT from_status, to_status, actor FROM payment_events WHERE payment_id = $1 ORDER BY id", [id]).map {
            "\(try $0.decode("from_status", as: String?.self) ?? "-")→\(try $0.decode("to_status", as: String.self)) by \(try $0.decode("actor", as: String.self))"
        }
    }

    // MARK: Broker

    func publish(_ messages: [StageMessage]) throws {
        let publisher = AMQPPublisher(configuration: try AMQPConfiguration(url: TestServices.amqpURL),
                                      topology: PipelineTopology.topology(retrySchedule: configuration.retrySchedule))
        defer { publisher.close() }
        var properties = AMQPProperties()
        properties.contentType = "application/json"
        try publisher.publish(messages.map {
            AMQPOutboundMessage(exchange: PipelineTopology.stagesExchange, routingKey: Stage.authorize.rawValue, body: $0.encoded(),
                                properties: properties, mandatory: true)
        }, timeout: 30)
    }

    /// Waits until `queue` has yielded at least `count` hand-offs for each of `ids` and returns how many each got.
    /// Hand-offs of other payments are left unacknowledged and return to the queue when the connection closes.
    func handOffs(in queue: String, for ids: Set<UUID>, atLeast count: Int = 1, timeout: Double = 20) throws -> [UUID: Int] {
        let connection = try TestServices.amqp()
        defer { connection.close() }
        var seen: [UUID: Int] = [:]
        let deadline = Date().addingTimeInterval(timeout)
        while ids.contains(where: { seen[$0, default: 0] < count }) {
            guard Date() < deadline else { throw TestFailure("timed out waiting for hand-offs in \(queue): got \(seen.count) of \(ids.count)") }
            guard let delivery = try connection.get(queue: queue) else {
                Thread.sleep(forTimeInterval: 0.05)
                continue
            }
            if let message = try? StageMessage.decode(delivery.body), ids.contains(message.paymentId) {
                try connection.ack(deliveryTag: delivery.deliveryTag)
                seen[message.paymentId, default: 0] += 1
            }
        }
        return seen
    }
}
