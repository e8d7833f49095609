import Crypto
import Foundation
import JSON
import JWT
import Pipeline
import Postgres

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

extension OperationEvent {
    /// The operation on the job's payment: correlated by the operation's id; `jobId` is the payment's job.
    public var subject: ResultSubject {
        ResultSubject(merchantId: payment.merchantId, jobId: payment.jobId, paymentId: payment.id.paymentIDText, operationId: operation.operationId)
    }
}

extension NotifyEvent {
    /// A finished operation's event: settling it stamps the operation `notified_at`.
    public init(_ event: OperationEvent) {
        subject = .operation(event.operation.id)
        (id, type, body, occurredAt) = (event.id, event.type, event.body, event.occurredAt)
        (paymentId, merchantId, jobId) = (event.payment.id, event.payment.merchantId, event.payment.jobId)
        resultSubject = event.subject
    }
}

/// Operations' events as notify reads and settles them (``NotifyRowEvents``): the operation hand-off
/// (``OperationEventMessage``) names a `payment_operations` row. Also the events a disabled endpoint held, which
/// re-enabling it sends (``held(_:on:)``).
public struct OperationEvents: NotifyRowEvents {
    public init() {}

    /// A finished operation's event, in one statement: the operation (``Pipeline/OperationStore``'s columns, which
    /// its decoder reads), its payment with the lifecycle after it (``Pipeline/PaymentStore``'s, under the prefix
    /// `p_`, since the operation's row has its own `id`, `merchant_id`, `payment_id`, error columns), the job's
    /// metadata and `notify_url`, and whether the event was notified (`notified_at`) or attempted before.
    public func read(_ rowId: Int64, on connection: PostgresConnection) throws -> NotifyRead? {
        guard let row = try connection.query(
            """
            SELECT \(OperationStore.columns), o.notified_at,
                   \(PaymentStore.recordAndMoneyColumns(of: "p", prefixedWith: Self.paymentPrefix)), p.notify_url, p.metadata::text AS metadata,
                   (SELECT string_agg(DISTINCT event_id, ',') FROM webhook_deliveries WHERE payment_id = p.id) AS attempted_events
            FROM \(OperationStore.from) WHERE o.id = $1
            """, [rowId]).first else { return nil }
        let operation = try OperationStore.operation(row: row)
        let paymentRow = row.prefixed(Self.paymentPrefix)
        // An operation refused before naming a payment has none; a payment gone since is unknown too.
        guard operation.paymentId != nil, try paymentRow.decode("id", as: UUID?.self) != nil else { return nil }
        let payment = try PaymentRecord(row: paymentRow)
        let lifecycle = try PaymentStore.money(row: paymentRow).lifecycle
        let metadata = (try? JSONValue.parse(Array(try row.decode("metadata", as: String.self).utf8))) ?? .object([])
        let event = OperationEvent(operation: operation, payment: payment, lifecycle: lifecycle, metadata: metadata)
        // Event ids are `evt_` and hex digits: a comma never occurs in one.
        let attempted = try row.decode("attempted_events", as: String?.self)?.split(separator: ",").contains { $0 == event.id } ?? false
        let finished = operation.state == .succeeded || operation.state == .failed
        return NotifyRead(
            payment: payment, merchantId: operation.merchantId, event: finished ? NotifyEvent(event) : nil,
            notifyURL: try row.decode("notify_url", as: String?.self), settled: try row.decode("notified_at", as: Date?.self) != nil,
            attempted: attempted, pending: "operation \(operation.operationId) is \(operation.state.rawValue)")
    }

    public func settle(_ rowId: Int64, on connection: PostgresConnection) throws {
        try OperationStore().markNotified(rowId, on: connection)
    }

    /// The finished operations not yet notified whose payment has a `held` attempt to one of `endpoints`: their
    /// events were held with the endpoint; their hand-offs are published again when it is re-enabled. Notify settles an
    /// operation's webhook once (`notified_at`), so a hand-off for one notified meanwhile sends nothing. Each is sent in
    /// its payment's trace (the row's `trace_parent`/`trace_state`): the operation's own trace is not stored.
    public func held(_ endpoints: [WebhookEndpoint], on connection: PostgresConnection) throws -> [OperationEventMessage] {
        guard !endpoints.isEmpty else { return [] }
        let rows = try connection.query(
            """
            SELECT o.id AS operation, p.id, p.merchant_id, p.job_id, p.trace_parent, p.trace_state
            FROM payment_operations o JOIN payments p ON p.id = o.payment_id
            WHERE o.notified_at IS NULL AND o.state = ANY($3::text[])
              AND EXISTS (SELECT 1 FROM webhook_deliveries d JOIN unnest($1::text[], $2::text[]) AS k(merchant_id, url) ON d.url = k.url
                          WHERE d.payment_id = p.id AND d.outcome = 'held' AND p.merchant_id = k.merchant_id)
            ORDER BY o.id
            """,
            [PostgresArray(endpoints.map(\.merchantId)), PostgresArray(endpoints.map(\.url)),
             PostgresArray([OperationStore.State.succeeded.rawValue, OperationStore.State.failed.rawValue])])
        return try rows.map { row in
            OperationEventMessage(payment: try PaymentStore.tracedMessage(row: row), operationRowId: try row.decode("operation", as: Int64.self))
        }
    }

    /// The prefix of the payment's columns in an operation's read.
    private static let paymentPrefix = "p_"
}
