import AMQP
import Foundation

/// Builds the messages the runtime publishes on a delivery's behalf: hand-offs, delayed retries and
/// dead-letter copies. Pure, so the routing rules are unit-testable without a broker.
public struct DeliveryRouter: Sendable {
    public enum Header {
        public static let errorCode = "x-paypipe-error-code"
        public static let error = "x-paypipe-error"
        public static let stage = "x-paypipe-stage"
        public static let retries = "x-paypipe-retries"
        public static let deadLetteredAt = "x-paypipe-dead-lettered-at"
        public static let originalExchange = "x-paypipe-original-exchange"
        public static let originalRoutingKey = "x-paypipe-original-routing-key"
    }

    public let stage: Stage
    public let retrySchedule: RetrySchedule

    public init(stage: Stage, retrySchedule: RetrySchedule) {
        self.stage = stage
        self.retrySchedule = retrySchedule
    }

    /// A persistent hand-off of `message` to `target`, through the stages exchange.
    public func handOff(_ message: StageMessage, to target: Stage) -> AMQPOutboundMessage {
        var properties = AMQPProperties()
        properties.contentType = "application/json"
        properties.messageId = "\(message.paymentId.uuidString.lowercased()):\(target.rawValue)"
        properties.persistent = true
        properties.appId = "paypipe-\(stage.rawValue)"
        return AMQPOutboundMessage(
            exchange: PipelineTopology.stagesExchange, routingKey: target.rawValue,
            body: message.encoded(), properties: properties, mandatory: true)
    }

    /// How many times this delivery was already retried through the retry tiers.
    public func previousRetries(of delivery: AMQPDelivery) -> Int {
        if case .int(let count)? = delivery.properties.headers[Header.retries] { return Int(count) }
        return 0
    }

    /// A transient failure: a copy for the next retry tier, or a dead letter once retries are exhausted.
    public func retry(_ delivery: AMQPDelivery, after failure: StageFailure) -> (message: AMQPOutboundMessage, exhausted: Bool) {
        let previous = previousRetries(of: delivery)
        switch retrySchedule.decision(previousRetries: previous) {
        case .exhausted:
            let reason = "retries exhausted after \(previous) attempt(s); last error \(failure.code): \(failure.reason)"
            return (deadLetter(delivery, code: "retries_exhausted", reason: reason), true)
        case .retry(let tier, let delay):
            var properties = delivery.properties
            properties.persistent = true
            // Jitter: each message expires after 80–100 % of its tier's delay, so retries of a burst spread out.
            // A per-message expiration shorter than the queue TTL cannot overtake the head of the queue, so the
            // tier delay stays an upper bound and no message waits behind a longer one by more than the tier.
            properties.expiration = String(Int(delay * 1000 * Double.random(in: 0.8...1.0)))
            properties.headers[Header.retries] = .int(Int64(previous + 1))
            properties.headers[Header.errorCode] = .string(failure.code)
            properties.headers[Header.error] = .string(Self.truncate(failure.reason))
            return (AMQPOutboundMessage(
                exchange: "", routingKey: retrySchedule.queueName(stage: stage, tier: tier),
                body: delivery.body, properties: properties, mandatory: true), false)
        }
    }

    /// A copy of the delivery for the stage's dead-letter queue. A broker dead-letter exchange cannot add
    /// headers, which is why the runtime publishes this copy itself (with confirm) before acking.
    public func deadLetter(_ delivery: AMQPDelivery, code: String, reason: String, now: Date = Date()) -> AMQPOutboundMessage {
        var properties = delivery.properties
        properties.persistent = true
        properties.headers[Header.errorCode] = .string(code)
        properties.headers[Header.error] = .string(Self.truncate(reason))
        properties.headers[Header.stage] = .string(stage.rawValue)
        properties.headers[Header.deadLetteredAt] = .string(Logger.timestamp(now))
        properties.headers[Header.originalExchange] = .string(delivery.exchange)
        properties.headers[Header.originalRoutingKey] = .string(delivery.routingKey)
        return AMQPOutboundMessage(
            exchange: "", routingKey: stage.deadLetterQueueName, body: delivery.body,
            properties: properties, mandatory: true)
    }

    /// Header values are bounded so a pathological error text cannot bloat every dead letter.
    static func truncate(_ text: String, limit: Int = 500) -> String {
        text.count <= limit ? text : String(text.prefix(limit)) + "…"
    }
}
