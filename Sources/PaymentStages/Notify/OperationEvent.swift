import Crypto
import Foundation
import JSON
import JWT
import Pipeline

/// A finished operation's event, sent like a payment's result (signed webhook, `paypipe.results`; schema
/// `docs/schemas/event.schema.json`): `payment.captured`, `payment.voided`, `payment.refunded` — what the gateway did,
/// which for a refund before settlement is a void or a lowered capture, with `requested: "refund"` — or
/// `payment.operation_failed` with the failure code.
public struct OperationEvent: Sendable, Equatable {
    public static let failedType = "payment.operation_failed"

    public let operation: OperationStore.Operation
    public let payment: PaymentRecord
    /// The payment's lifecycle after the operation (absent on a payment without one).
    public let lifecycle: MoneyLifecycle?
    public let metadata: JSONValue

    public init(operation: OperationStore.Operation, payment: PaymentRecord, lifecycle: MoneyLifecycle?, metadata: JSONValue) {
        self.operation = operation
        self.payment = payment
        self.lifecycle = lifecycle
        self.metadata = metadata
    }

    public var type: String {
        operation.state == .succeeded ? (operation.effect?.event.rawValue ?? Self.failedType) : Self.failedType
    }

    /// Stable per operation (merchant and operationId), so receivers dedupe on `webhook-id` across redeliveries.
    public var id: String {
        let digest = SHA256.hash(Array("paypipe-operation-event:\(operation.merchantId):\(operation.operationId)".utf8))
        return "evt_" + Hex.encode(Array(digest.prefix(16)))
    }

    public var occurredAt: Date { operation.finishedAt ?? operation.createdAt }

    public var json: JSONValue {
        var data: [(key: String, value: JSONValue)] = [
            ("id", .string(id)), ("paymentId", .string(payment.id.paymentIDText)), ("jobId", .string(payment.jobId)),
            ("merchantId", .string(payment.merchantId)),
        ]
        if let orderReference = payment.orderReference { data.append(("orderReference", .string(orderReference))) }
        data.append(("operationId", .string(operation.operationId)))
        data.append(("requested", .string(operation.kind.rawValue)))
        data.append(("requestedBy", .string(operation.requestedBy.rawValue)))
        let currency = payment.currency ?? ""
        func money(_ value: Int64) -> JSONValue { .object([("value", .integer(value)), ("currency", .string(currency))]) }
        if operation.state == .succeeded, let effect = operation.effect {
            data.append(("amount", money(effect.amount)))
        } else if let amount = operation.amount {
            data.append(("requestedAmount", money(amount)))
        }
        if let lifecycle {
            data.append(("lifecycle", .object([
                ("status", .string(lifecycle.status.rawValue)), ("authorized", money(lifecycle.authorizedAmount)),
                ("captured", money(lifecycle.capturedAmount)), ("refunded", money(lifecycle.refundedAmount)),
            ])))
        }
        if let reference = operation.gatewayReference ?? operation.request.map(\.targetReference) {
            data.append(("gateway", .object([("transactionReference", .string(reference))])))
        }
        if operation.state != .succeeded {
            var error: [(key: String, value: JSONValue)] = [("code", .string(operation.errorCode ?? "operation_failed"))]
            if let reason = operation.errorMessage { error.append(("reason", .string(reason))) }
            data.append(("error", .object(error)))
        }
        data.append(("metadata", metadata))
        data.append(("completedAt", .string(PaymentEvent.timestamp(occurredAt))))
        return .object([("type", .string(type)), ("timestamp", .string(PaymentEvent.timestamp(occurredAt))), ("data", .object(data))])
    }

    public var body: [UInt8] { json.serialized() }
}

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