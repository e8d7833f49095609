import AMQP
import Foundation
import PaymentStages
import Pipeline
import Testing

extension Integration {
/// The real `paypipe-submit` executable SIGKILLed while its AUTH is at the gateway (after the `sending` attempt
/// was committed, before the outcome was): the restarted worker reconciles by TRANSACTIONQUERY, with one AUTH.
@Suite struct SubmitWorkerCrashTests {
    static let metricsPort = "19186"

    static func spawnWorker(_ harness: SubmitHarness, logPath: String) throws -> ChildProcess {
        try ChildProcess.spawn(WorkerProcessTests.binaryDirectory + "/paypipe-submit", [], environment: [
            "PAYPIPE_ENV": "sandbox", "PAYPIPE_AMQP_URL": TestServices.amqpURL, "PAYPIPE_DATABASE_URL": harness.authorize.databaseURL,
            "PAYPIPE_DATA_KEY": harness.authorize.dataKeyBase64, "PAYPIPE_METRICS_PORT": metricsPort, "PAYPIPE_METRICS_HOST": "127.0.0.1",
            "PAYPIPE_RECONCILE_INTERVAL": "0", "PAYPIPE_RETRY_DELAYS": "500ms,1s", "PAYPIPE_MAX_RETRIES": "40",
            "PAYPIPE_PREFETCH": "10", "PAYPIPE_BATCH_SIZE": "5", "PAYPIPE_MERCHANT_CACHE_TTL": "0",
            "PAYPIPE_GATEWAY_TIMEOUT": "6s", "PAYPIPE_WEBSERVICES_TIMEOUT": "6s", "PAYPIPE_RECONCILE_GRACE": "2s", "PAYPIPE_SEND_WINDOW": "1s",
        ], logPath: logPath)
    }

    @Test func sigkillBetweenSendAndCommitIsReconciledWithOneAuth() throws {
        // The simulator records the AUTH, then answers after 4 s: the worker is killed while it waits.
        let harness = try SubmitHarness(slowResponseSeconds: 4)
        defer { harness.tearDown() }
        let (message, order) = try harness.preparedPayment(amount: 1098)
        let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("submit-\(UUID()).log").path
        defer { try? FileManager.default.removeItem(atPath: logPath) }

        let first = try Self.spawnWorker(harness, logPath: logPath)
        try TestServices.eventually("healthy") { try HTTPProbe.get("http://127.0.0.1:\(Self.metricsPort)/healthz").status == 200 }
        let publisher = AMQPPublisher(configuration: try AMQPConfiguration(url: TestServices.amqpURL),
                                      topology: PipelineTopology.topology(retrySchedule: RetrySchedule(delays: [0.5, 1], maxRetries: 40)))
        var properties = AMQPProperties()
        properties.contentType = "application/json"
        try publisher.publish([AMQPOutboundMessage(exchange: PipelineTopology.stagesExchange, routingKey: Stage.submit.rawValue,
                                                   body: message.encoded(), properties: properties, mandatory: true)], timeout: 30)
        publisher.close()
        try TestServices.eventually(timeout: 20, "the AUTH reached the gateway") { try harness.authCount(order) == 1 }
        first.signal(SIGKILL)
        #expect(first.wait() == 128 + SIGKILL)
        #expect(try harness.payment(message.paymentId).status == .submitting)
        #expect(try harness.attempts(message.paymentId).map(\.state) == [.sending])

        let second = try Self.spawnWorker(harness, logPath: logPath)
        defer {
            second.signal(SIGTERM)
            second.wait()
        }
        try TestServices.eventually(timeout: 40, "reconciled after restart") {
            try harness.payment(message.paymentId).status == .authorized
        }
        #expect(try harness.authCount(order) == 1)
        let attempts = try harness.attempts(message.paymentId)
        #expect(attempts.map(\.requestType) == ["AUTH", GatewayAttemptStore.queryRequestType])
        #expect(attempts.map(\.outcome) == ["authorized", "found"])
        #expect(try harness.isPurged(message.paymentId))
        #expect(try harness.authorize.handOffs(in: Stage.notify.queueName, for: [message.paymentId]) == [message.paymentId: 1])
    }
}
}
