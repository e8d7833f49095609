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
