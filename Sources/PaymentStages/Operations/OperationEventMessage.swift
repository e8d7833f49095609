import Foundation
import JWT
import Pipeline

/// The hand-off of a finished operation to `notify`: a payment's hand-off (``Pipeline/StageMessage``) with one more
/// member, `"operation"` (the operation's row id), on the stages exchange with routing key `notify`. Like a payment's
/// it is a reference only; notify reads the operation and sends its event, not the payment's.
public struct OperationEventMessage: Sendable, Equatable {
    public let payment: StageMessage
    public let operationRowId: Int64

    public init(payment: StageMessage, operationRowId: Int64) {
        self.payment = payment
        self.operationRowId = operationRowId
    }

    public func encoded() -> [UInt8] {
        JSONValue.object([
            ("jobId", .string(payment.jobId)), ("merchantId", .string(payment.merchantId)), ("operation", .integer(operationRowId)),
            ("paymentId", .string(payment.paymentId.paymentIDText)),
        ]).serialized()
    }

    /// The operation row id a hand-off names, nil for a payment's own hand-off.
    public static func operation(in bytes: [UInt8]) -> Int64? {
        guard let object = try? JSONValue.parse(bytes, maxDepth: 4), let id = object["operation"]?.int64Value, id > 0 else { return nil }
        return id
    }

    /// The hand-off as the runtime publishes it: persistent, mandatory, `message_id` `operation:<row id>:notify`. A
    /// payment built from its row (``StageMessage/traceparent``: a held event released by an operator) is sent in that
    /// trace; otherwise the handled delivery's trace applies.
    public func handOff(at now: Date = Date()) -> OutboundMessage {
        let trace = TraceContext.parse(traceparent: payment.traceparent, tracestate: payment.tracestate)
        return Self.notifyHandOff(id: "operation:\(operationRowId):notify", body: encoded(), at: now, trace: trace)
    }

    /// A message to `notify` through the stages exchange, as a hand-off travels (routing key `notify`).
    static func notifyHandOff(id: String, body: [UInt8], at now: Date = Date(), trace: TraceContext? = nil) -> OutboundMessage {
        var headers: [String: String] = [:]
        if let trace {
            headers[TraceContext.traceparentHeader] = trace.traceparent
            headers[TraceContext.tracestateHeader] = trace.state
        }
        return .event(exchange: BrokerLayout.stagesExchange, type: Stage.notify.rawValue, id: id, body: body, timestamp: now, mandatory: true,
                      headers: headers)
    }
}
