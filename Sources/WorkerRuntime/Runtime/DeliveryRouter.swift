import AMQP
import Foundation

/// Builds the messages the runtime publishes on a delivery's behalf: hand-offs, delayed retries and
/// dead-letter copies. Pure, so the routing rules are unit-testable without a broker.
public struct DeliveryRouter: Sendable {
    public enum Header {
        /// Every header the runtime owns starts with this; publishers' values are dropped (``DeliveryRouter/admitted(_:)``).
        public static let prefix = "x-paypipe-"
        public static let errorCode = "x-paypipe-error-code"
        public static let error = "x-paypipe-error"
        public static let stage = "x-paypipe-stage"
        public static let retries = "x-paypipe-retries"
        public static let deadLetteredAt = "x-paypipe-dead-lettered-at"
        public static let originalExchange = "x-paypipe-original-exchange"
        public static let originalRoutingKey = "x-paypipe-original-routing-key"
        /// The routing key a job was published to `paypipe.jobs` with, kept on its retry and dead-letter copies (which
        /// travel under other routing keys): an operation's kind is its routing key.
        public static let jobRoutingKey = "x-paypipe-job-routing-key"
        /// The AMQP `user_id` a job was published with (``AMQPDelivery/userId``), kept on its retry and dead-letter
        /// copies: those are published by a worker, which may not claim the publisher's `user_id` (the broker refuses
        /// that), and the publisher check (merchant `publishers`) must judge a retried job like its first delivery.
        public static let publisher = "x-paypipe-publisher"
        /// RabbitMQ's sender-selected distribution header: routing keys a message is routed by besides its own.
        public static let carbonCopy = "CC"
    }

    /// The broker user that published `delivery`'s job: its `user_id` (which the broker checked), or for a runtime copy
    /// arriving through the stages exchange the one that copy carries (honoured only there, ``admitted(_:)``); nil when
    /// the publisher claimed none, and for a hand-off between stages.
    public static func publisher(of delivery: AMQPDelivery) -> String? {
        if delivery.exchange == BrokerLayout.stagesExchange, case .string(let user)? = delivery.properties.headers[Header.publisher] {
            return user
        }
        return delivery.userId
    }

    private static func keepingPublisher(_ properties: inout AMQPProperties, of delivery: AMQPDelivery) {
        properties.headers[Header.publisher] = publisher(of: delivery).map { .string($0) }
    }

    /// The routing key `delivery` was first published to `paypipe.jobs` with: its own on a first delivery, else the
    /// one its runtime copies carry (honoured only through the stages exchange, ``admitted(_:)``).
    public static func jobRoutingKey(of delivery: AMQPDelivery) -> String? {
        if delivery.exchange == BrokerLayout.jobsExchange { return delivery.routingKey }
        guard case .string(let key)? = delivery.properties.headers[Header.jobRoutingKey] else { return nil }
        return key
    }

    private static func keepingJobRoutingKey(_ properties: inout AMQPProperties, origin exchange: String, routingKey: String) {
        if exchange == BrokerLayout.jobsExchange { properties.headers[Header.jobRoutingKey] = .string(routingKey) }
    }

    /// The stage whose deliveries it routes: its retry tiers, its DLQ, the `app_id` of what it publishes.
    public let stage: StageName
    public let retrySchedule: RetrySchedule

    public init(stage: StageName, retrySchedule: RetrySchedule) {
        self.stage = stage
        self.retrySchedule = retrySchedule
    }

    /// A persistent hand-off to its target stage, through the stages exchange: routing key and AMQP `type` = the
    /// target's name, `timestamp` = `now` (when it is published); with the hand-off's own trace context
    /// (``HandOffMessage/trace``) as its `traceparent`/`tracestate` when it has one.
    public func handOff(_ handOff: HandOffMessage, now: Date = Date()) -> AMQPOutboundMessage {
        var properties = AMQPProperties()
        properties.contentType = "application/json"
        properties.messageId = handOff.id
        properties.type = handOff.target.rawValue
        properties.persistent = true
        properties.appId = "paypipe-\(stage.rawValue)"
        properties.timestamp = now
        if let trace = handOff.trace {
            properties.headers[TraceContext.traceparentHeader] = .string(trace.traceparent)
            properties.headers[TraceContext.tracestateHeader] = trace.state.map { .string($0) }
        }
        return AMQPOutboundMessage(
            exchange: BrokerLayout.stagesExchange, routingKey: handOff.target.rawValue,
            body: handOff.body, properties: properties, mandatory: true)
    }

    /// The delivery as the runtime may trust it. The runtime's own headers (`x-paypipe-*`) are honoured only on what
    /// comes through ``BrokerLayout/stagesExchange`` — hand-offs and the retry tiers, which dead-letter back through
    /// it, and which only workers publish to (docs/security.md, broker permissions) — and dropped from a job published to
    /// `paypipe.jobs` or a message sent straight to a queue, so a publisher can neither skip retries nor forge a dead
    /// letter's origin. `x-delivery-count` is dropped from the copy unless the broker redelivered it (see
    /// ``AMQPDelivery/deliveryCount``), so a publisher's value never reaches a retry or a dead letter either.
    public func admitted(_ delivery: AMQPDelivery) -> AMQPDelivery {
        var admitted = delivery
        if delivery.exchange != BrokerLayout.stagesExchange {
            admitted.properties.headers = admitted.properties.headers.filter { !$0.key.lowercased().hasPrefix(Header.prefix) }
        }
        if !delivery.redelivered { admitted.properties.headers[AMQPDelivery.deliveryCountHeader] = nil }
        return admitted
    }

    /// How many times this delivery was already retried through the retry tiers, within 0…`maxRetries` whatever the
    /// header says (`-1` once indexed the tier list at -1 and trapped the worker).
    public func previousRetries(of delivery: AMQPDelivery) -> Int {
        guard case .int(let count)? = delivery.properties.headers[Header.retries] else { return 0 }
        return Int(clamping: min(max(count, 0), Int64(retrySchedule.maxRetries)))
    }

    /// A transient failure: a copy for the next retry tier, or a dead letter once retries are exhausted. A wait for a
    /// known instant (``StageFailure/waiting``) is re-driven at that instant (``RetrySchedule/hop(toward:)``, measured
    /// from `now`) and not counted.
    public func retry(_ delivery: AMQPDelivery, after failure: StageFailure, now: Date = Date()) -> (message: AMQPOutboundMessage, exhausted: Bool) {
        let previous = previousRetries(of: delivery)
        if case .waiting(_, _, let until) = failure, let (tier, delay) = retrySchedule.hop(toward: until.timeIntervalSince(now)) {
            return (copy(delivery, to: tier, expiration: delay, retries: previous, after: failure), false)
        }
        switch retrySchedule.decision(previousRetries: previous) {
        case .exhausted:
            return (exhausted(delivery, after: failure), true)
        case .retry(let tier, let delay):
            // Jitter: each message expires after 80–100 % of its tier's delay, so retries of a burst spread out.
            // A per-message expiration shorter than the queue TTL cannot overtake the head of the queue, so the
            // tier delay stays an upper bound and no message waits behind a longer one by more than the tier.
            return (copy(delivery, to: tier, expiration: delay * Double.random(in: 0.8...1.0), retries: previous + 1, after: failure), false)
        }
    }

    /// The copy of `delivery` for retry tier `tier`, expiring after `expiration` seconds, with `retries` recorded.
    private func copy(_ delivery: AMQPDelivery, to tier: Int, expiration: Double, retries: Int, after failure: StageFailure) -> AMQPOutboundMessage {
        var properties = delivery.properties
        properties.persistent = true
        // The broker's count belongs to the delivery, not to the fresh copy (which starts at zero on its way back).
        properties.headers[AMQPDelivery.deliveryCountHeader] = nil
        properties.expiration = String(Int(expiration * 1000))
        properties.headers[Header.retries] = .int(Int64(retries))
        Self.keepingJobRoutingKey(&properties, origin: delivery.exchange, routingKey: delivery.routingKey)
        Self.keepingPublisher(&properties, of: delivery)
        properties.headers[Header.errorCode] = .string(failure.code)
        properties.headers[Header.error] = .string(Self.truncate(failure.reason))
        return AMQPOutboundMessage(exchange: "", routingKey: retrySchedule.queueName(for: stage, tier: tier),
                                   body: delivery.body, properties: properties, mandatory: true)
    }

    /// The dead letter of a delivery whose last allowed attempt failed (`retries_exhausted`): what ``retry(_:after:)``
    /// returns once ``RetrySchedule/decision(previousRetries:)`` says `.exhausted`, and what a stage that records the
    /// exhaustion itself (notify commits it with the payment's results event) publishes.
    public func exhausted(_ delivery: AMQPDelivery, after failure: StageFailure) -> AMQPOutboundMessage {
        deadLetter(delivery, code: "retries_exhausted", reason: Self.exhaustedReason(previousRetries: previousRetries(of: delivery), after: failure))
    }

    /// The reason of every `retries_exhausted` dead letter.
    static func exhaustedReason(previousRetries: Int, after failure: StageFailure) -> String {
        "retries exhausted after \(previousRetries) attempt(s); last error \(failure.code): \(failure.reason)"
    }

    /// A copy of the delivery for the stage's dead-letter queue. A broker dead-letter exchange cannot add
    /// headers, which is why the runtime publishes this copy itself (with confirm) before acking.
    public func deadLetter(_ delivery: AMQPDelivery, code: String, reason: String, now: Date = Date()) -> AMQPOutboundMessage {
        var properties = delivery.properties
        Self.keepingPublisher(&properties, of: delivery)
        return deadLetter(body: delivery.body, properties: properties, code: code, reason: reason,
                          origin: (delivery.exchange, delivery.routingKey), now: now)
    }

    /// A message the broker could not route even after the topology was re-declared, as a dead letter in this stage's
    /// DLQ: code `unroutable`, and where it was going as its origin, so `paypipe dlq replay` sends it there once the
    /// route exists.
    public func unroutable(_ message: AMQPOutboundMessage, reason: String, now: Date = Date()) -> AMQPOutboundMessage {
        deadLetter(body: message.body, properties: message.properties, code: "unroutable", reason: reason,
                   origin: (message.exchange, message.routingKey), now: now)
    }

    private func deadLetter(body: [UInt8], properties original: AMQPProperties, code: String, reason: String,
                            origin: (exchange: String, routingKey: String), now: Date) -> AMQPOutboundMessage {
        var properties = original
        properties.persistent = true
        // A fresh copy: the broker's count of the original's deliveries means nothing for it (and the DLQ counts its own).
        properties.headers[AMQPDelivery.deliveryCountHeader] = nil
        properties.headers[Header.errorCode] = .string(code)
        properties.headers[Header.error] = .string(Self.truncate(reason))
        properties.headers[Header.stage] = .string(stage.rawValue)
        properties.headers[Header.deadLetteredAt] = .string(Logger.timestamp(now))
        properties.headers[Header.originalExchange] = .string(origin.exchange)
        properties.headers[Header.originalRoutingKey] = .string(origin.routingKey)
        Self.keepingJobRoutingKey(&properties, origin: origin.exchange, routingKey: origin.routingKey)
        return AMQPOutboundMessage(
            exchange: "", routingKey: stage.deadLetterQueueName, body: body, properties: properties, mandatory: true)
    }

    /// What a handler's ``OutboundMessage`` is on the broker.
    public func message(for outbound: OutboundMessage, now: Date = Date()) -> AMQPOutboundMessage {
        switch outbound {
        case .event(let exchange, let type, let id, let body, let timestamp, let mandatory, let alsoRoutedAs, let correlationId, let headers):
            var properties = AMQPProperties()
            properties.contentType = "application/json"
            properties.messageId = id
            properties.type = type
            properties.persistent = true
            properties.appId = "paypipe-\(stage.rawValue)"
            properties.timestamp = timestamp
            properties.correlationId = correlationId
            for (name, value) in headers { properties.headers[name] = .string(value) }
            if !alsoRoutedAs.isEmpty { properties.headers[Header.carbonCopy] = .array(alsoRoutedAs.map { .string($0) }) }
            return AMQPOutboundMessage(exchange: exchange, routingKey: type, body: body, properties: properties, mandatory: mandatory)
        case .handOff(let handOff):
            return self.handOff(handOff, now: now)
        case .deadLetter(let inbound, let code, let reason):
            return deadLetter(inbound.delivery, code: code, reason: reason, now: now)
        case .retry(let inbound, let failure):
            return retry(inbound.delivery, after: failure, now: now).message
        }
    }

    /// Whether `message` is already a copy for this stage's DLQ (which has nowhere further to go).
    public func isDeadLetter(_ message: AMQPOutboundMessage) -> Bool {
        message.exchange.isEmpty && message.routingKey == stage.deadLetterQueueName
    }

    /// Header values are bounded so a pathological error text cannot bloat every dead letter.
    static func truncate(_ text: String, limit: Int = 500) -> String {
        text.count <= limit ? text : String(text.prefix(limit)) + "…"
    }
}
