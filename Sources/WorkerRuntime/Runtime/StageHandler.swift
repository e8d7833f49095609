import AMQP
import Foundation
import Postgres
// The failure dispositions a handler returns (StageFailure), a module shared with the payment domain, which decides in them.
@_exported import StageContract

/// A stage's domain logic, free of queue mechanics.
///
/// The runtime owns consuming, batching, transactions, hand-off publishing, acking, retries and dead-lettering; a
/// handler turns a batch of decoded messages into database changes and one outcome each. The payments' reconciler is
/// a stage-side component (``StageRuntime``'s `components`).
public protocol StageHandler: Sendable, StageHandlerUpkeep {
    associatedtype Message: Sendable

    /// The stage this handler serves: decides the queue consumed and the labels of logs and metrics.
    var stageName: StageName { get }

    /// Pure decoding of a delivered message. Throwing `.unattributable` dead-letters the message unread.
    func decode(_ message: InboundMessage) throws(StageFailure) -> Message

    /// Handles a batch of decoded messages and returns one result per message, in order. Provided by the runtime's
    /// batch shapes (``TransactionalStageHandler``, ``CallingStageHandler``).
    ///
    /// Implementations must be idempotent: a message redelivered after a crash must find its effect
    /// already applied and return the same hand-off again (so the runtime re-publishes it).
    func process(_ batch: [Message], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>]

    /// What the span of a message's handling is about (e.g. `paypipe.payment_id`, `paypipe.job_id`), and the fields of
    /// its `message_handled` log line: the runtime knows no payments, so the stage names them. Default: none.
    func spanAttributes(of message: Message) -> [SpanAttribute]
}

extension StageHandler {
    public func spanAttributes(of message: Message) -> [SpanAttribute] { [] }
}

/// Optional parts of a stage handler that the runtime calls besides processing batches. Both default to nothing.
public protocol StageHandlerUpkeep {
    /// Called once by ``StageRuntime`` with the worker's registry, before any batch: a handler (or its breakers,
    /// gates, key counters) registers and reports its own series there, next to the runtime's.
    func attach(metrics registry: MetricsRegistry)

    /// Periodic upkeep on the reconciler thread, every `PAYPIPE_RECONCILE_INTERVAL`, on that thread's own database
    /// connection and outside any transaction (e.g. the decrypt stage's certificate-expiry check). A thrown error is
    /// logged (`upkeep_failed`) and the next round tries again.
    func upkeep(database: PostgresConnection, logger: Logger) throws
}

extension StageHandlerUpkeep {
    public func attach(metrics registry: MetricsRegistry) {}
    public func upkeep(database: PostgresConnection, logger: Logger) throws {}
}

/// A stage whose whole effect is a database change: decrypt and authorize, the runtime's batch shape
/// (``CallingStageHandler``) with an empty call-out phase.
///
/// The runtime-provided ``process(_:database:)`` runs ``handle(_:transaction:)`` on the whole batch in **one**
/// transaction (``BatchTransaction/settle(_:on:_:)``); if it throws, the same `handle` runs again on halves of the
/// batch, each in a savepoint, down to single messages, so one bad message rolls back only its own work. `handle` may
/// therefore run more than once for a message (earlier runs rolled back): keep it to database work.
public protocol TransactionalStageHandler: StageHandler {
    /// The batch's one path, inside the batch transaction: one read of everything the stage decides on, a pure decide,
    /// a set-based apply. Returns one result per message, in order: a message's decided failure (a dead letter, a
    /// retry) is a result, not a throw. Throw (any error, which ``FailureClassifier`` classifies) only when the batch's
    /// statements fail: the runtime then narrows the failure down by halving.
    func handle(_ batch: [Message], transaction: PostgresConnection) throws -> [Result<StageOutcome, StageFailure>]
}

extension TransactionalStageHandler {
    public func process(_ batch: [Message], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        // A failure is the smallest part of the batch that failed (a single message), or the transaction itself
        // (commit, connection): nothing of it was applied.
        BatchTransaction.settle(batch, on: database) { try self.handle($0, transaction: $1) }.map { $0.flatMap { $0 } }
    }
}

// MARK: - What a handler throws

/// Maps any error a handler throws to a ``StageFailure``.
///
/// Handlers throw domain errors already classified where they know better (a bad token is permanent);
/// everything else lands here. Unknown errors are treated as transient: retried a bounded number of
/// times, then dead-lettered as exhausted, so a bug never silently drops or endlessly loops a message.
public enum FailureClassifier {
    public static func classify(_ error: any Error) -> StageFailure {
        switch error {
        case let failure as StageFailure:
            return failure
        case let postgres as PostgresError where postgres.isConnectionProblem:
            return .databaseUnavailable(reason: postgres.description)
        case let postgres as PostgresError where postgres.isSerializationFailureOrDeadlock:
            return .transient(code: "database_conflict", reason: postgres.description)
        case let postgres as PostgresError where refusesValue(postgres):
            return .unattributable(code: "invalid_data", reason: postgres.description)
        case let postgres as PostgresError:
            return .transient(code: "database_error", reason: postgres.description)
        default:
            return .transient(code: "internal_error", reason: String(describing: type(of: error)))
        }
    }

    /// The database refused a value itself — a parameter that cannot be bound (a NUL byte in text) or SQLSTATE class 22
    /// (data exception: bad encoding, `\u0000` in jsonb, out-of-range number). Retrying the same bytes cannot succeed, so
    /// the message is dead-lettered at once (`invalid_data`) instead of cycling through every retry tier. Input
    /// validation should have caught it; this is the safety net. Descriptions are redacted by the Postgres module.
    static func refusesValue(_ error: PostgresError) -> Bool {
        if case .invalidParameter = error { return true }
        return error.sqlState?.hasPrefix("22") == true
    }
}

// MARK: - What a handler returns for each message

/// What a handler decided for one message once its database work is done.
public enum StageOutcome: Sendable, Equatable {
    /// Publish the hand-off to its stage (with confirm) before acking.
    case handOff(HandOffMessage)
    /// Nothing further to publish (e.g. notification delivered).
    case completed
    /// Nothing to publish and nobody to report to now (e.g. an operation that waits for a person): the runtime acks
    /// it and logs `message_settled` with `note` (a short snake_case word, not a failure code) and `reason`, so that
    /// the message's end is never silent.
    case settled(note: String, reason: String)
    /// Publish these messages (with confirms, like hand-offs) before acking: e.g. the result event on
    /// `paypipe.results`. Used by stages whose effect is itself a message.
    case publish([OutboundMessage])
}

/// A message for another stage's queue, already rendered by the stage side: the runtime publishes it persistent and
/// mandatory through the stages exchange, under the target's name, as JSON, stamped with the time it is published
/// (``DeliveryRouter/handOff(_:now:)``).
public struct HandOffMessage: Sendable, Equatable {
    public let target: StageName
    /// Its `message_id` (consumers dedupe on it).
    public let id: String
    public let body: [UInt8]
    /// The trace it continues when it is not the handled delivery's: a payment re-driven from its row (the reconciler,
    /// an operator's command, operations handing a deferred payment back) carries the context its row kept, and is sent
    /// with it (``DeliveryRouter/handOff(_:now:)``), so the next stage's span joins the payment's own trace. Nil: the
    /// delivery's (``DeliveryTrace/stamped(_:)``), or a new trace for what is published outside any delivery.
    public let trace: TraceContext?

    public init(to target: StageName, id: String, body: [UInt8], trace: TraceContext? = nil) {
        (self.target, self.id, self.body, self.trace) = (target, id, body, trace)
    }
}

// MARK: - What a handler is given, and what it asks the runtime to publish

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
    /// A hand-off to another stage, published as a ``StageOutcome/handOff(_:)`` is (``DeliveryRouter/handOff(_:now:)``):
    /// for a stage whose effect is several messages, some of them hand-offs (operations: an operation's event and its
    /// payment's closing, both to notify).
    case handOff(HandOffMessage)
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
