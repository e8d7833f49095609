import Foundation
import PaymentStages
import Pipeline
import Testing

extension Integration {
    /// The real executables together: `paypipe-notify` (configured from its environment) delivering to
    /// `paypipe-webhook-receiver`, which verifies the signature and fails each event's first delivery on purpose.
    @Suite struct NotifyProcessTests {
        @Test func workerDeliversToTheReceiverExecutableThroughARetry() throws {
            let harness = try NotifyHarness(maxRetries: 3)
            defer { harness.tearDown() }
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("notify-process-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let receiverLog = directory.appendingPathComponent("receiver.log").path
            let port = Int.random(in: 20_000...29_999)

            let receiver = try ChildProcess.spawn(WorkerProcessTests.binaryDirectory + "/paypipe-webhook-receiver", [], environment: [
                "PAYPIPE_WEBHOOK_SECRET": NotifyHarness.secret, "PAYPIPE_RECEIVER_PORT": String(port),
                "PAYPIPE_RECEIVER_FAIL_FIRST_PERCENT": "100",
            ], logPath: receiverLog)
            defer {
                receiver.signal(SIGTERM)
                _ = receiver.wait()
            }
            try TestServices.eventually(timeout: 10, "receiver listening") {
                ((try? String(contentsOfFile: receiverLog, encoding: .utf8)) ?? "").contains("receiver_listening")
            }
            try harness.applyMerchant(webhookURL: "http://127.0.0.1:\(port)/webhooks")

            let worker = try ChildProcess.spawn(WorkerProcessTests.binaryDirectory + "/paypipe-notify", [], environment: [
                "PAYPIPE_AMQP_URL": harness.amqpURL, "PAYPIPE_DATABASE_URL": harness.databaseURL, "PAYPIPE_ENV": "sandbox",
                "PAYPIPE_DATA_KEY": harness.dataKeyBase64, "PAYPIPE_RETRY_DELAYS": "300ms", "PAYPIPE_MAX_RETRIES": "3",
                "PAYPIPE_METRICS_PORT": "0", "PAYPIPE_METRICS_HOST": "127.0.0.1", "PAYPIPE_RECONCILE_INTERVAL": "0",
            ], logPath: directory.appendingPathComponent("worker.log").path)
            defer {
                worker.signal(SIGTERM)
                _ = worker.wait()
            }

            let message = try harness.insertPayment(status: .authorized)
            try harness.publish([message])
            try harness.waitDone(message.paymentId, timeout: 30)

            let deliveries = try harness.deliveries(message.paymentId)
            #expect(deliveries.map(\.outcome) == ["retrying", "delivered"])
            #expect(deliveries.map(\.statusCode) == [503, 204])
            let log = try String(contentsOfFile: receiverLog, encoding: .utf8)
            let verified = log.split(separator: "\n").filter { $0.contains("webhook_verified") }
            #expect(verified.count == 1)
            #expect(verified.first?.contains(PaymentEvent.id(paymentId: message.paymentId, type: .authorized)) == true)
            #expect(!log.contains("webhook_rejected"))
            #expect(try harness.drain(harness.resultsQueue).map(\.routingKey) == ["payment.authorized"])
        }
    }
}
