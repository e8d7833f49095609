import AMQP

/// The trace of one delivery's handling: the span the runtime records for it, and what it stamps on what it causes.
///
/// A delivery's `traceparent` (W3C Trace Context, as an AMQP string header) names its sender's span: the handling is a
/// child span of it, in the same trace. Without one, or with a malformed one, the handling starts a new trace: a bad
/// header never fails a job. Pure, so the rules are unit-tested without a broker.
public struct DeliveryTrace: Sendable, Equatable {
    /// The sender's span (the previous stage's, or the publisher's), nil when this handling starts the trace.
    public let parentSpanId: String?
    /// This handling's span.
    public let context: TraceContext

    public init(parentSpanId: String?, context: TraceContext) {
        (self.parentSpanId, self.context) = (parentSpanId, context)
    }

    public static func of(_ delivery: AMQPDelivery) -> DeliveryTrace {
        let headers = delivery.properties.headers
        if let parent = TraceContext.parse(traceparent: text(headers[TraceContext.traceparentHeader]),
                                           tracestate: text(headers[TraceContext.tracestateHeader])) {
            return DeliveryTrace(parentSpanId: parent.spanId, context: parent.child())
        }
        return DeliveryTrace(parentSpanId: nil, context: .newTrace())
    }

    /// `message` as sent on this handling's behalf: a hand-off or an event names this handling's span as its parent.
    /// The delivery's own copies (retry tiers and dead letters, published to the default exchange) keep the delivery's
    /// headers, so the retried attempt is another child of the same sender. A hand-off that carries a trace of its own
    /// (``HandOffMessage/trace``: a deferred payment operations hands back to authorize continues the payment's trace,
    /// not the operation's) keeps it.
    public func stamped(_ message: AMQPOutboundMessage) -> AMQPOutboundMessage {
        guard !message.exchange.isEmpty, message.properties.headers[TraceContext.traceparentHeader] == nil else { return message }
        var stamped = message
        stamped.properties.headers[TraceContext.traceparentHeader] = .string(context.traceparent)
        stamped.properties.headers[TraceContext.tracestateHeader] = context.state.map { .string($0) }
        return stamped
    }

    /// The `traceId` and `spanId` fields of every log line about the delivery.
    public var logFields: [(String, LogValue)] { context.logFields }

    /// A header as text: AMQP publishers send strings as `longstr`, which some clients decode as bytes.
    private static func text(_ value: AMQPFieldValue?) -> String? {
        switch value {
        case .string(let text)?: text
        case .bytes(let bytes)?: String(validating: bytes, as: UTF8.self)
        default: nil
        }
    }
}

/// How a message's handling ended, as its span (`paypipe.outcome`, status) and its log line say it.
public struct HandlingEnd: Sendable, Equatable {
    /// `hand_off`, `completed`, `settled`, `published`, `retry` or `dead_lettered`.
    public let outcome: String
    /// OK, or the failure's code.
    public let status: Span.Status

    public init(_ result: Result<StageOutcome, StageFailure>) {
        switch result {
        case .success(.handOff): (outcome, status) = ("hand_off", .ok)
        case .success(.completed): (outcome, status) = ("completed", .ok)
        case .success(.settled): (outcome, status) = ("settled", .ok)
        case .success(.publish): (outcome, status) = ("published", .ok)
        case .failure(let failure):
            switch failure {
            case .unattributable, .permanent: outcome = "dead_lettered"
            case .transient, .waiting, .databaseUnavailable: outcome = "retry"
            }
            status = .error(failure.code)
        }
    }
}

/// One message of a batch, once its handling is decided: what its span and `message_handled` line are made of.
struct FinishedMessage {
    let delivery: AMQPDelivery
    let trace: DeliveryTrace
    let result: Result<StageOutcome, StageFailure>
    /// The stage's (``StageHandler/spanAttributes(of:)``).
    let attributes: [SpanAttribute]

    var ending: HandlingEnd { HandlingEnd(result) }
}
