import Foundation
@testable import AMQP

/// Access to the shared local RabbitMQ used by the broker tests. Every test uses its own uniquely
/// named queues/exchanges and deletes them afterwards, because other helpers share the broker.
enum TestBroker {
    static var url: String {
        ProcessInfo.processInfo.environment["PAYPIPE_TEST_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672/%2f"
    }

    static func configuration(heartbeatSeconds: Int = 10, name: String = "paypipe-amqp-tests") throws -> AMQPConfiguration {
        var configuration = try AMQPConfiguration(url: url)
        configuration.heartbeatSeconds = heartbeatSeconds
        configuration.connectionName = name
        configuration.reconnectBackoff = AMQPBackoff(baseSeconds: 0.05, capSeconds: 1)
        return configuration
    }

    static func uniqueName(_ purpose: String) -> String {
        "paypipe.test.amqp.\(purpose).\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Runs `body` on a fresh tool connection and closes it.
    static func withConnection<T>(_ body: (AMQPConnection) throws -> T) throws -> T {
        let connection = try AMQPConnection(configuration: configuration())
        defer { connection.close() }
        return try body(connection)
    }

    /// Best-effort removal of test topology.
    static func delete(queues: [String] = [], exchanges: [String] = []) {
        guard let connection = try? AMQPConnection(configuration: configuration()) else { return }
        defer { connection.close() }
        for queue in queues { _ = try? connection.deleteQueue(queue) }
        for exchange in exchanges { try? connection.deleteExchange(exchange) }
    }

    /// Polls `condition` every 20 ms until it holds or `timeout` seconds pass.
    static func eventually(timeout: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return try condition()
    }

    /// Receives until `count` deliveries arrived or `timeout` seconds passed. With `ack`, each batch is
    /// acknowledged as it arrives (needed to get past the prefetch window).
    static func receive(_ count: Int, from consumer: AMQPConsumer, ack: Bool = false, timeout: Double = 15) -> [AMQPDelivery] {
        var received: [AMQPDelivery] = []
        let deadline = Date().addingTimeInterval(timeout)
        while received.count < count, Date() < deadline {
            let batch = consumer.receive(maxCount: count - received.count, timeout: 0.25)
            if ack { consumer.ack(batch) }
            received += batch
        }
        return received
    }

    /// The texts in `expected` that no delivery carried (empty when every one arrived).
    static func missing(_ expected: [String], in deliveries: [AMQPDelivery]) -> Set<String> {
        Set(expected).subtracting(deliveries.map { String(decoding: $0.body, as: UTF8.self) })
    }

    static func message(to queue: String, _ text: String, properties: AMQPProperties = AMQPProperties()) -> AMQPOutboundMessage {
        AMQPOutboundMessage(exchange: "", routingKey: queue, body: Array(text.utf8), properties: properties)
    }
}
