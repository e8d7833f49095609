// amqp-bench: throughput of the AMQP module against a real broker, printed as JSON.
//
//   swift run -c release amqp-bench [amqp-url]      (default: $PAYPIPE_TEST_AMQP_URL or local guest)
//
// Measures confirmed publishing of 1 KB persistent messages to a quorum queue with confirm windows
// of 1, 100 and 1000 messages, then consume + ack with prefetch 100 (the consumer acks each
// received batch, like a pipeline stage would). Uses a uniquely named queue and deletes it.
import AMQP
import Foundation

struct Figure: Encodable {
    var messages: Int
    var seconds: Double
    var messagesPerSecond: Int
}

struct Report: Encodable {
    var broker: String
    var queueType = "quorum"
    var messageBytes: Int
    var persistent = true
    var confirmPublish: [String: Figure]
    var consumeAckPrefetch100: Figure
}

func measure(_ messages: Int, _ body: () throws -> Void) rethrows -> Figure {
    let start = ContinuousClock.now
    try body()
    let elapsed = start.duration(to: .now)
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Figure(messages: messages, seconds: (seconds * 1000).rounded() / 1000,
                  messagesPerSecond: Int(Double(messages) / seconds))
}

let url = CommandLine.arguments.dropFirst().first
    ?? ProcessInfo.processInfo.environment["PAYPIPE_TEST_AMQP_URL"]
    ?? "amqp://guest:guest@127.0.0.1:5672/%2f"
var configuration = try AMQPConfiguration(url: url)
configuration.connectionName = "amqp-bench"
let queue = "paypipe.bench.\(UUID().uuidString.prefix(8).lowercased())"
let topology = AMQPTopology(queues: [.quorum(name: queue)])
let body = [UInt8](repeating: UInt8(ascii: "x"), count: 1024)
let message = AMQPOutboundMessage(exchange: "", routingKey: queue, body: body,
                                  properties: AMQPProperties(contentType: "application/octet-stream", persistent: true))

let publisher = AMQPPublisher(configuration: configuration, topology: topology)
defer {
    publisher.close()
    if let admin = try? AMQPConnection(configuration: configuration) {
        _ = try? admin.deleteQueue(queue)
        admin.close()
    }
}

var confirmPublish: [String: Figure] = [:]
for (window, total) in [(1, 2_000), (100, 20_000), (1_000, 30_000)] {
    let batch = [AMQPOutboundMessage](repeating: message, count: window)
    confirmPublish["window_\(window)"] = try measure(total) {
        for _ in 0..<(total / window) { try publisher.publish(batch, timeout: 60) }
    }
}

let published = confirmPublish.values.reduce(0) { $0 + $1.messages }
let consumer = AMQPConsumer(configuration: configuration, topology: topology, queue: queue, prefetch: 100)
consumer.start()
// Wait for the first delivery so connection setup is not part of the figure.
let received = consumer.receive(maxCount: 100, timeout: 30)
consumer.ack(received)
let remaining = published - received.count
let consumeAck = measure(remaining) {
    var count = 0
    while count < remaining {
        let batch = consumer.receive(maxCount: 100, timeout: 10)
        if batch.isEmpty { break }
        consumer.ack(batch)
        count += batch.count
    }
    precondition(count == remaining, "consumed \(count) of \(remaining)")
}
consumer.close()

let report = Report(broker: configuration.redactedURL, messageBytes: body.count, confirmPublish: confirmPublish,
                    consumeAckPrefetch100: consumeAck)
let encoder = JSONEncoder()
encoder.keyEncodingStrategy = .convertToSnakeCase
encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
print(String(decoding: try encoder.encode(report), as: UTF8.self))
