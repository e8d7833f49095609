import AMQP
import Foundation
import Pipeline

/// `paypipe dlq list|show|replay STAGE`: inspects and replays a stage's dead-letter queue.
///
/// Reading uses `basic.get` without acknowledgement and keeps every message it has read unacked until the
/// end, so no message is read twice and none is lost if the CLI dies (the broker requeues unacked messages
/// when the connection closes). Replay acknowledges a dead letter only after the broker has confirmed its
/// re-publication, so a crash in between duplicates at worst — which the pipeline's idempotency absorbs.
enum DLQCommand: CLICommand {
    static let name = "dlq"
    static let summary = "list, show or replay a stage's dead-letter queue"
    static let usage = """
        usage: paypipe dlq list STAGE [--limit N] [--json]
               paypipe dlq show STAGE [MESSAGE_ID] [--limit N] [--json]
               paypipe dlq replay STAGE [--message-id ID] [--limit N]
          STAGE is decrypt, authorize, submit, notify or operations; its dead letters are in paypipe.STAGE.dlq.
          list    prints the queue's message count, then per message (up to N, default 50): message id, error
                  code, error and when it was dead-lettered. --json prints one JSON object per line instead.
          show    prints the headers and body of up to N messages (default 10), or of MESSAGE_ID only. --json
                  prints one JSON object per message (messageId, exchange, routingKey, headers, body, bytes).
          list and show read with basic.get and requeue what they read (basic.nack requeue=true) when done:
          the messages stay in the DLQ, but their order may change, they are marked redelivered, and while the
          command runs they are invisible to other readers. Each read counts as a delivery attempt of the
          quorum DLQ (x-delivery-count), which has no delivery limit.
          replay  moves up to N messages (default: all there were when it started), or only MESSAGE_ID, back to
                  where they were first published: headers x-paypipe-original-exchange/-routing-key set by the
                  workers, or for messages the broker dead-lettered (delivery limit), the first x-death entry.
                  The dead-letter headers are dropped. Each message is acked in the DLQ only after the broker
                  confirmed its re-publication (at-least-once; the pipeline is idempotent on jobId/paymentId).
                  Messages with no known origin, or one that is not an exchange the pipeline declares (paypipe.jobs,
                  paypipe.stages, paypipe.results), are left in the DLQ and reported.
          Exit codes: 0 ok, 1 some messages could not be replayed, 64 usage, 69 broker unavailable.
        """

    /// What an operator needs to know about one dead letter.
    struct Summary: Encodable {
        let messageId: String?
        let errorCode: String?
        let error: String?
        let deadLetteredAt: String?
        let originalExchange: String?
        let originalRoutingKey: String?
        let bytes: Int
    }

    static let syntax = CommandSyntax(
        .init(["list"], operands: ["STAGE"], flags: ["--json"], options: ["--limit"]),
        .init(["show"], operands: ["STAGE", "[MESSAGE_ID]"], flags: ["--json"], options: ["--limit"]),
        .init(["replay"], operands: ["STAGE"], options: ["--message-id", "--limit"]))

    static func run(_ arguments: CommandArguments) -> Int32 {
        do {
            let action = arguments.positionals[0]
            guard let stage = Stage(rawValue: arguments.positionals[1]) else {
                throw CommandArguments.UsageError(description: "STAGE must be one of " + Stage.allCases.map(\.rawValue).joined(separator: ", "))
            }
            let limit = try arguments.value("--limit").map { text throws(CommandArguments.UsageError) in
                guard let limit = Int(text), limit > 0 else { throw .init(description: "--limit needs a positive count") }
                return limit
            }
            let configuration = try WorkerConfiguration(stage: nil)
            var amqp = try AMQPConfiguration(url: configuration.amqpURL)
            amqp.connectionName = "paypipe-cli-dlq"
            // Short-lived tool connection that may sit idle between reads: no heartbeats to miss.
            amqp.heartbeatSeconds = 0
            let connection = try AMQPConnection(configuration: amqp)
            defer { connection.close() }
            switch action {
            case "list":
                return try list(stage, connection: connection, limit: limit ?? 50, json: arguments.flag("--json"))
            case "show":
                return try show(stage, connection: connection, messageId: arguments.positionals.dropFirst(2).first,
                                limit: limit ?? 10, json: arguments.flag("--json"))
            case "replay":
                return try replay(stage, connection: connection, configuration: configuration, amqp: amqp,
                                  messageId: arguments.value("--message-id"), limit: limit)
            default:
                throw CommandArguments.UsageError(description: "unknown dlq action '\(action)'")
            }
        } catch let error as CommandArguments.UsageError {
            return report(usage: error)
        } catch {
            return OperatorContext.report(error)
        }
    }

    static func list(_ stage: Stage, connection: AMQPConnection, limit: Int, json: Bool) throws -> Int32 {
        let (count, _) = try connection.queueDeclarePassive(stage.deadLetterQueueName)
        let deliveries = try peek(stage, connection: connection, limit: limit)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            for delivery in deliveries {
                print(String(decoding: try encoder.encode(summary(delivery)), as: UTF8.self))
            }
        } else {
            print("\(stage.deadLetterQueueName): \(count) message\(count == 1 ? "" : "s")"
                  + (deliveries.count < count ? " (showing \(deliveries.count))" : ""))
            // Tab-separated, not a padded table: scripts and ContractTests cut these fields.
            for delivery in deliveries {
                let item = summary(delivery)
                print([item.messageId ?? "-", item.errorCode ?? "-", item.deadLetteredAt ?? "-", item.error ?? "-"]
                    .joined(separator: "\t"))
            }
        }
        return ExitCode.ok
    }

    static func show(_ stage: Stage, connection: AMQPConnection, messageId: String?, limit: Int, json: Bool) throws -> Int32 {
        // Looking for one id means reading past others: bounded by the queue depth rather than by N.
        let depth = Int(try connection.queueDeclarePassive(stage.deadLetterQueueName).messages)
        let deliveries = try peek(stage, connection: connection, limit: messageId == nil ? limit : depth)
            .filter { messageId == nil || $0.properties.messageId == messageId }
        guard !deliveries.isEmpty else {
            printError("paypipe: no matching message in \(stage.deadLetterQueueName)")
            return ExitCode.failure
        }
        for delivery in deliveries.prefix(limit) {
            if json {
                let object: [String: Any] = [
                    "messageId": delivery.properties.messageId ?? NSNull(), "exchange": delivery.exchange, "routingKey": delivery.routingKey,
                    "headers": delivery.properties.headers.mapValues(render), "body": String(decoding: delivery.body, as: UTF8.self),
                    "bytes": delivery.body.count,
                ]
                print(String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self))
                continue
            }
            print("message \(delivery.properties.messageId ?? "-") (\(delivery.body.count) bytes)")
            print("  exchange \(delivery.exchange.isEmpty ? "(default)" : delivery.exchange), routing key \(delivery.routingKey)")
            for (key, value) in delivery.properties.headers.sorted(by: { $0.key < $1.key }) {
                print("  \(key): \(render(value))")
            }
            print("  body: " + String(decoding: delivery.body, as: UTF8.self))
        }
        return ExitCode.ok
    }

    static func replay(_ stage: Stage, connection: AMQPConnection, configuration: WorkerConfiguration,
                       amqp: AMQPConfiguration, messageId: String?, limit: Int?) throws -> Int32 {
        // Only what is there now: a message that dead-letters again while we replay is not picked up again.
        let depth = Int(try connection.queueDeclarePassive(stage.deadLetterQueueName).messages)
        let publisher = AMQPPublisher(configuration: amqp,
                                      topology: PipelineTopology.topology(retrySchedule: configuration.retrySchedule, brokerNodes: amqp.nodes.count))
        defer { publisher.close() }
        var kept: [AMQPDelivery] = []
        var replayed = 0
        var stranded = 0
        for _ in 0..<depth {
            if let limit, replayed >= limit { break }
            guard let delivery = try connection.get(queue: stage.deadLetterQueueName) else { break }
            if let messageId, delivery.properties.messageId != messageId {
                kept.append(delivery)
                continue
            }
            guard let (exchange, routingKey) = origin(delivery) else {
                printError("paypipe: \(delivery.properties.messageId ?? "a message without id") has no known origin; left in the DLQ")
                kept.append(delivery)
                stranded += 1
                continue
            }
            guard PipelineTopology.isReplayTarget(exchange: exchange) else {
                printError("paypipe: \(delivery.properties.messageId ?? "a message without id") came from '\(exchange.isEmpty ? "(default)" : exchange)', not an exchange of the pipeline; left in the DLQ")
                kept.append(delivery)
                stranded += 1
                continue
            }
            var properties = delivery.properties
            for header in [DeliveryRouter.Header.errorCode, DeliveryRouter.Header.error, DeliveryRouter.Header.stage,
                           DeliveryRouter.Header.deadLetteredAt, DeliveryRouter.Header.originalExchange,
                           DeliveryRouter.Header.originalRoutingKey, DeliveryRouter.Header.retries,
                           "x-death", "x-first-death-exchange", "x-first-death-queue", "x-first-death-reason",
                           "x-last-death-exchange", "x-last-death-queue", "x-last-death-reason", "x-delivery-count"] {
                properties.headers[header] = nil
            }
            do {
                try publisher.publish(AMQPOutboundMessage(exchange: exchange, routingKey: routingKey, body: delivery.body,
                                                          properties: properties, mandatory: true), timeout: 30)
            } catch {
                // Not confirmed: leave it dead-lettered (requeued below) and stop, the broker is unhappy.
                kept.append(delivery)
                try settle(kept, connection: connection)
                printError("paypipe: replay of \(delivery.properties.messageId ?? "-") not confirmed: \(error)")
                print("replayed \(replayed) message\(replayed == 1 ? "" : "s") from \(stage.deadLetterQueueName)")
                return ExitCode.failure
            }
            try connection.ack(deliveryTag: delivery.deliveryTag)
            replayed += 1
            print("replayed \(delivery.properties.messageId ?? "-") → \(exchange.isEmpty ? "(default)" : exchange)/\(routingKey)")
        }
        try settle(kept, connection: connection)
        print("replayed \(replayed) message\(replayed == 1 ? "" : "s") from \(stage.deadLetterQueueName)")
        return stranded == 0 && (messageId == nil || replayed > 0) ? ExitCode.ok : ExitCode.failure
    }

    /// Where a dead letter was first published: the worker's headers, else the broker's first `x-death` entry.
    static func origin(_ delivery: AMQPDelivery) -> (exchange: String, routingKey: String)? {
        let headers = delivery.properties.headers
        if let exchange = headers[DeliveryRouter.Header.originalExchange]?.stringValue,
           let routingKey = headers[DeliveryRouter.Header.originalRoutingKey]?.stringValue {
            return (exchange, routingKey)
        }
        guard let death = headers["x-death"]?.arrayValue?.first?.tableValue,
              let exchange = death["exchange"]?.stringValue,
              let routingKey = death["routing-keys"]?.arrayValue?.first?.stringValue else { return nil }
        return (exchange, routingKey)
    }

    /// Reads up to `limit` messages without acknowledging, then requeues them all.
    static func peek(_ stage: Stage, connection: AMQPConnection, limit: Int) throws -> [AMQPDelivery] {
        var deliveries: [AMQPDelivery] = []
        while deliveries.count < limit, let delivery = try connection.get(queue: stage.deadLetterQueueName) {
            deliveries.append(delivery)
        }
        try settle(deliveries, connection: connection)
        return deliveries
    }

    /// Requeues read-but-kept messages with one `basic.nack multiple` (tags on a channel are increasing).
    static func settle(_ deliveries: [AMQPDelivery], connection: AMQPConnection) throws {
        guard let last = deliveries.map(\.deliveryTag).max() else { return }
        try connection.nack(deliveryTag: last, multiple: true, requeue: true)
    }

    static func summary(_ delivery: AMQPDelivery) -> Summary {
        let headers = delivery.properties.headers
        let death = headers["x-death"]?.arrayValue?.first?.tableValue
        let origin = origin(delivery)
        return Summary(
            messageId: delivery.properties.messageId,
            errorCode: headers[DeliveryRouter.Header.errorCode]?.stringValue ?? death?["reason"]?.stringValue,
            error: headers[DeliveryRouter.Header.error]?.stringValue,
            deadLetteredAt: headers[DeliveryRouter.Header.deadLetteredAt]?.stringValue
                ?? death?["time"].flatMap(timestamp),
            originalExchange: origin?.exchange, originalRoutingKey: origin?.routingKey,
            bytes: delivery.body.count)
    }

    static func timestamp(_ value: AMQPFieldValue) -> String? {
        if case .timestamp(let date) = value { Logger.timestamp(date) } else { nil }
    }

    static func render(_ value: AMQPFieldValue) -> String {
        switch value {
        case .string(let text): text
        case .int(let number): String(number)
        case .bool(let flag): String(flag)
        case .double(let number): String(number)
        case .timestamp(let date): Logger.timestamp(date)
        case .bytes(let bytes): "<\(bytes.count) bytes>"
        case .decimal(let scale, let value): "\(value)e-\(scale)"
        case .void: "void"
        case .array(let values): "[" + values.map(render).joined(separator: ", ") + "]"
        case .table(let table):
            "{" + table.sorted(by: { $0.key < $1.key }).map { "\($0.key): \(render($0.value))" }.joined(separator: ", ") + "}"
        }
    }
}
