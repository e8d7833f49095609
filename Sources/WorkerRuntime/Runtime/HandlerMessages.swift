import AMQP
import Foundation

/// A delivery as a stage handler sees it: the runtime's own, broker-neutral form, so no handler names the broker's
/// types. The runtime keeps the delivery it came from (to dead-letter it in its format, see ``OutboundMessage``).
public struct InboundMessage: Sendable, Equatable {
    public var body: [UInt8] { delivery.body }
    /// The trace context of this message's handling: its trace (the publisher's `traceparent`, or a new one) and the
    /// span of this stage's handling, which the runtime stamps on everything the message causes. A stage that sends
    /// something itself passes it on (notify: the webhook's `traceparent` header).
    public let trace: TraceContext
    /// The publisher's timestamp (the AMQP `timestamp` property), if it set one.
    public var publishedAt: Date? { delivery.properties.timestamp }
    /// Whether the broker may have delivered it before (`false` guarantees it did not).
    public var redelivered: Bool { delivery.redelivered }
    /// How many of this stage's retry tiers it has been through, within 0…`maxRetries` whatever its headers say.
    public let previousRetries: Int
    /// The routing key it was first published to `paypipe.jobs` with (an operation's kind), kept on the runtime's retry
    /// copies (``DeliveryRouter/jobRoutingKey(of:)``); nil for a hand-off between stages.
    public var jobRoutingKey: String? { DeliveryRouter.jobRoutingKey(of: delivery) }
    /// The broker user that published it (AMQP `user_id`, checked by the broker; kept on retry copies), nil if it
    /// claimed none (``DeliveryRouter/publisher(of:)``).
    public var publisher: String? { DeliveryRouter.publisher(of: delivery) }
    /// Whether it came through the stages exchange, which only workers publish to: a hand-off, or a retry copy.
    public var isFromWorkers: Bool { delivery.exchange == BrokerLayout.stagesExchange }
    /// The routing key it was delivered with (for a refusal's reason).
    public var routingKey: String { delivery.routingKey }
    /// The delivery, for the runtime alone.
    let delivery: AMQPDelivery

    init(_ delivery: AMQPDelivery, previousRetries: Int, trace: TraceContext = .newTrace()) {
        self.delivery = delivery
        self.previousRetries = previousRetries
        self.trace = trace
    }

    /// The same delivery is the same message, whatever span its handling got.
    public static func == (lhs: InboundMessage, rhs: InboundMessage) -> Bool {
        lhs.delivery == rhs.delivery && lhs.previousRetries == rhs.previousRetries
    }

    /// A message as a stage's queue would deliver it, for driving a handler without a broker (tests, tools): a
    /// hand-off from the stages exchange to `stage`.
    public init(body: [UInt8], to stage: StageName, publishedAt: Date? = nil, redelivered: Bool = false, previousRetries: Int = 0) {
        var properties = AMQPProperties()
        properties.timestamp = publishedAt
        self.init(AMQPDelivery(body: body, properties: properties, exchange: BrokerLayout.stagesExchange, routingKey: stage.rawValue,
                               redelivered: redelivered, deliveryTag: 0, generation: 0),
                  previousRetries: previousRetries)
    }

    /// A job as `paypipe.jobs` would deliver it under `routingKey` (e.g. `payment.capture.requested`), for driving a
    /// handler without a broker.
    public init(job body: [UInt8], routingKey: String, redelivered: Bool = false, publisher: String? = nil) {
        self.init(AMQPDelivery(body: body, properties: AMQPProperties(), exchange: BrokerLayout.jobsExchange, routingKey: routingKey,
                               redelivered: redelivered, deliveryTag: 0, generation: 0, userId: publisher),
                  previousRetries: 0)
    }
}

/// A message a handler asks the runtime to publish (with confirm, before the ack), in the runtime's own terms; the
/// runtime renders it for the broker (``DeliveryRouter/message(for:)``).
public enum OutboundMessage: Sendable, Equatable {
    /// A persistent JSON event on `exchange`: routing key and AMQP `type` = `type`, `message_id` = `id` (consumers dedupe
    /// on it), `timestamp` = when it happened, `app_id` = the worker. Not mandatory unless asked: an exchange nobody
    /// binds to is a valid deployment. `alsoRoutedAs`: more routing keys it is routed by, sent as RabbitMQ's `CC` header
    /// (sender-selected distribution): a queue bound by several of its keys still receives it once. `correlationId`:
    /// the AMQP `correlation_id` (what the event answers, e.g. a job id); `headers`: string headers for readers that
    /// select without parsing the body.
    case event(exchange: String, type: String, id: String, body: [UInt8], timestamp: Date, mandatory: Bool = false, alsoRoutedAs: [String] = [],
               correlationId: String? = nil, headers: [String: String] = [:])
    /// The inbound message's copy for this stage's dead-letter queue, with the code, the reason and its origin.
    case deadLetter(InboundMessage, code: String, reason: String)
    /// The inbound message's copy for its next retry tier after `failure` (or its `retries_exhausted` dead letter once
    /// the schedule is spent): what a `.failure(failure)` result publishes, for a stage whose failed attempt also has
    /// messages to publish (notify: the results event, published at the outcome whatever the webhook's fate).
    case retry(InboundMessage, after: StageFailure)
}

extension OutboundMessage {
    /// The dead letter of an inbound message whose last allowed attempt failed: the same `retries_exhausted` dead letter
    /// the runtime publishes (``DeliveryRouter/exhausted(_:after:)``), for a stage that commits the exhaustion itself
    /// (notify, with the payment's results event).
    public static func exhausted(_ inbound: InboundMessage, after failure: StageFailure) -> OutboundMessage {
        .deadLetter(inbound, code: "retries_exhausted",
                    reason: DeliveryRouter.exhaustedReason(previousRetries: inbound.previousRetries, after: failure))
    }
}
