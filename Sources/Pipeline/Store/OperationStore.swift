import Foundation
import Postgres

/// SQL for `payment_operations` and `operation_attempts` (migration 7), their one writer. Stateless: callers own the
/// transactions. The payment's money state is written through ``PaymentStore`` (``PaymentStore/changeLifecycle``), in
/// the same transaction, under the payment's row lock, which every method that decides or finishes an operation takes
/// first: two operations of one payment are never decided on the same state.
///
/// Split by who reads what, one type (the tables' one writer) in three files: this one, the row as every reader sees it
/// (``Operation``) with what notify and `paypipe payment show` read and notify's one write (``markNotified(_:on:)``);
/// and, with the operations stage that runs them, its reads and begun operations (`OperationStore+Plan.swift`) and its
/// attempts and endings (`OperationStore+Record.swift`).
public struct OperationStore: Sendable {
    public init() {}

    /// Who asked for an operation.
    public enum Requester: String, Sendable, Hashable, CaseIterable {
        case merchant
        /// The automatic void of a manual authorisation not captured within `captureWithin`.
        case expiry
        /// The automatic void of a late AUTH on a payment PayPipe reported failed.
        case lateAuthorization = "late_authorization"
    }

    public enum State: String, Sendable, Hashable, CaseIterable {
        case requested, succeeded, failed
        /// A lost answer no query can settle (a refund's, at a processor whose refund no query finds), or a gateway state neither before nor after: a person
        /// decides; the payment takes no other operation meanwhile.
        case needsReview = "needs_review"

        public var isOpen: Bool { self == .requested || self == .needsReview }
    }

    /// One row of `payment_operations`.
    public struct Operation: Sendable, Equatable {
        public let id: Int64
        public let merchantId: String
        public let operationId: String
        public let paymentId: UUID?
        public let kind: OperationRequest.Kind
        public let requestedBy: Requester
        public let contentHash: [UInt8]
        public let amount: Int64?
        public let state: State
        /// What was decided under the payment's lock (absent on an operation refused without a call).
        public let request: GatewayOperation?
        /// What the processor calls ``request``, as stored (its connector's name, ``OperationProtocol/Transport/RequestNames``).
        public var requestType: String? = nil
        /// The settle status ``request`` sets, stored for a processor whose operations update the payment's settlement.
        public var updatedSettleStatus: SettlementState? = nil
        public let before: MoneyLifecycle?
        public let effect: OperationProtocol.Effect?
        /// A refund's own transaction reference, once answered.
        public let gatewayReference: String?
        public let errorCode: String?
        public let errorMessage: String?
        public let createdAt: Date
        public let finishedAt: Date?

        /// The record ``OperationProtocol/decide(_:_:gateway:)`` compares a request with.
        public var record: OperationProtocol.Record {
            let status: OperationProtocol.Record.Status = switch state {
            case .requested, .needsReview: .requested
            case .succeeded: .succeeded
            case .failed: .failed
            }
            return OperationProtocol.Record(operationId: operationId, kind: kind, contentHash: contentHash, status: status, code: errorCode)
        }
    }

    package static let columns = """
        o.id, o.merchant_id, o.operation_id, o.payment_id, o.kind, o.requested_by, o.content_hash, o.amount_minor, o.state,
        o.request_type, o.transaction_reference, o.update_settle_status, o.update_settle_base_amount, o.refund_amount, o.capture_amount,
        o.before_lifecycle, o.before_captured, o.before_refunded, o.after_lifecycle, o.after_captured, o.after_refunded,
        o.event_type, o.event_amount, o.gateway_reference, o.error_code, o.error_message, o.created_at, o.finished_at,
        p.capture_mode, coalesce(p.authorized_minor, p.amount_minor) AS authorized_minor, p.capture_deadline
        """

    /// The decided request of a stored operation, from what it is (its kind and the event its effect reports) and its
    /// amounts, whichever processor's names it was stored under: a capture of its amount (none: all of it); a void; a
    /// refund that refunds, that voids all of a captured payment, or that lowers the captured amount before settlement.
    static func request(kind: OperationRequest.Kind, event: OperationProtocol.Effect.Event?, reference: String, row: PostgresRow) throws -> GatewayOperation? {
        switch (kind, event) {
        case (.capture, _):
            let amount = try row.decode("capture_amount", as: Int64?.self) ?? row.decode("update_settle_base_amount", as: Int64?.self)
            return .capture(transactionReference: reference, amount: amount)
        case (.void, _), (.refund, .voided?):
            return .void(transactionReference: reference)
        case (.refund, .refunded?):
            return try row.decode("refund_amount", as: Int64?.self).map { .refund(parentTransactionReference: reference, amount: $0) }
        case (.refund, .captured?):
            return try row.decode("update_settle_base_amount", as: Int64?.self).map { .lowerCapture(transactionReference: reference, amount: $0) }
        case (.refund, nil):
            return nil
        }
    }

    package static func operation(row: PostgresRow) throws -> Operation {
        func decoded<T: RawRepresentable>(_ column: String, as: T.Type) throws -> T where T.RawValue == String {
            try row.decodeChoice(column, as: T.self)
        }
        func lifecycle(_ prefix: String) throws -> MoneyLifecycle? {
            guard let text = try row.decode("\(prefix)_lifecycle", as: String?.self), let status = LifecycleStatus(rawValue: text),
                  let mode = try row.decode("capture_mode", as: String?.self).flatMap(CaptureMode.init(rawValue:)),
                  let authorized = try row.decode("authorized_minor", as: Int64?.self) else { return nil }
            return MoneyLifecycle(status: status, captureMode: mode, authorizedAmount: authorized,
                                  capturedAmount: try row.decode("\(prefix)_captured", as: Int64.self),
                                  refundedAmount: try row.decode("\(prefix)_refunded", as: Int64.self),
                                  captureDeadline: try row.decode("capture_deadline", as: Date?.self))
        }
        let effect = try lifecycle("after").flatMap { after in
            try row.decode("event_type", as: String?.self).flatMap(OperationProtocol.Effect.Event.init(rawValue:)).map {
                OperationProtocol.Effect(lifecycle: after, event: $0, amount: try row.decode("event_amount", as: Int64.self))
            }
        }
        let requestType = try row.decode("request_type", as: String?.self)
        let kind: OperationRequest.Kind = try decoded("kind", as: OperationRequest.Kind.self)
        var request: GatewayOperation?
        if requestType != nil, let reference = try row.decode("transaction_reference", as: String?.self) {
            request = try Self.request(kind: kind, event: effect?.event, reference: reference, row: row)
        }
        return Operation(
            id: try row.decode("id", as: Int64.self), merchantId: try row.decode("merchant_id", as: String.self),
            operationId: try row.decode("operation_id", as: String.self), paymentId: try row.decode("payment_id", as: UUID?.self),
            kind: kind, requestedBy: try decoded("requested_by", as: Requester.self),
            contentHash: try row.decode("content_hash", as: [UInt8].self), amount: try row.decode("amount_minor", as: Int64?.self),
            state: try decoded("state", as: State.self), request: request, requestType: requestType,
            updatedSettleStatus: try row.decode("update_settle_status", as: String?.self).map(SettlementState.init(storedCode:)), before: try lifecycle("before"), effect: effect,
            gatewayReference: try row.decode("gateway_reference", as: String?.self), errorCode: try row.decode("error_code", as: String?.self),
            errorMessage: try row.decode("error_message", as: String?.self), createdAt: try row.decode("created_at", as: Date.self),
            finishedAt: try row.decode("finished_at", as: Date?.self))
    }


    package static let from = "payment_operations o LEFT JOIN payments p ON p.id = o.payment_id"

    public func load(_ id: Int64, on connection: PostgresConnection) throws -> Operation? {
        try connection.query("SELECT \(Self.columns) FROM \(Self.from) WHERE o.id = $1", [id]).first.map(Self.operation(row:))
    }

    /// The operations `ids`, by id, in one statement (a round's; missing ones are absent).
    public func load(_ ids: [Int64], on connection: PostgresConnection) throws -> [Int64: Operation] {
        guard !ids.isEmpty else { return [:] }
        let operations = try connection.query("SELECT \(Self.columns) FROM \(Self.from) WHERE o.id = ANY($1::int8[])", [PostgresArray(ids)])
            .map(Self.operation(row:))
        return Dictionary(operations.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Every operation of a payment, oldest first (`paypipe payment show`, tests).
    public func operations(paymentId: UUID, on connection: PostgresConnection) throws -> [Operation] {
        try connection.query("SELECT \(Self.columns) FROM \(Self.from) WHERE o.payment_id = $1 ORDER BY o.id", [paymentId])
            .map(Self.operation(row:))
    }

    /// Marks a finished operation's event as handed to notification.
    public func markNotified(_ id: Int64, on connection: PostgresConnection) throws {
        try connection.query("UPDATE payment_operations SET notified_at = clock_timestamp() WHERE id = $1 AND notified_at IS NULL", [id])
    }
}
