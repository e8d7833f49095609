import Foundation
import Postgres

/// SQL for `payment_operations` and `operation_attempts` (migration 7), their one writer. Stateless: callers own the
/// transactions. The payment's money state is written through ``PaymentStore`` (``PaymentStore/changeLifecycle``), in
/// the same transaction, under the payment's row lock, which every method that decides or finishes an operation takes
/// first: two operations of one payment are never decided on the same state.
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

    static let columns = """
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

    static func operation(row: PostgresRow) throws -> Operation {
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

    private static let from = "payment_operations o LEFT JOIN payments p ON p.id = o.payment_id"

    /// The merchant's operation with this `operationId`, on any payment.
    public func find(merchantId: String, operationId: String, on connection: PostgresConnection) throws -> Operation? {
        try connection.query("SELECT \(Self.columns) FROM \(Self.from) WHERE o.merchant_id = $1 AND o.operation_id = $2",
                             [merchantId, operationId]).first.map(Self.operation(row:))
    }

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

    /// The payment's operation still open (`requested` or `needs_review`), if any: at most one, by the unique index.
    public func open(paymentId: UUID, on connection: PostgresConnection) throws -> Operation? {
        try connection.query("SELECT \(Self.columns) FROM \(Self.from) WHERE o.payment_id = $1 AND o.state IN ('requested', 'needs_review')",
                             [paymentId]).first.map(Self.operation(row:))
    }

    /// Every operation of a payment, oldest first (`paypipe payment show`, tests).
    public func operations(paymentId: UUID, on connection: PostgresConnection) throws -> [Operation] {
        try connection.query("SELECT \(Self.columns) FROM \(Self.from) WHERE o.payment_id = $1 ORDER BY o.id", [paymentId])
            .map(Self.operation(row:))
    }

    /// An operation's key: its merchant and its `operationId`.
    public struct Key: Sendable, Hashable {
        public var merchantId: String
        public var operationId: String

        public init(merchantId: String, operationId: String) {
            (self.merchantId, self.operationId) = (merchantId, operationId)
        }
    }

    /// The merchants' operations with these ids, on any payment, by key, in one statement.
    public func find(_ keys: [(merchantId: String, operationId: String)], on connection: PostgresConnection) throws -> [Key: Operation] {
        guard !keys.isEmpty else { return [:] }
        let operations = try connection.query(
            "SELECT \(Self.columns) FROM \(Self.from) JOIN unnest($1::text[], $2::text[]) AS k(merchant_id, operation_id) "
                + "ON o.merchant_id = k.merchant_id AND o.operation_id = k.operation_id",
            [PostgresArray(keys.map(\.merchantId)), PostgresArray(keys.map(\.operationId))]).map(Self.operation(row:))
        return Dictionary(operations.map { (Key(merchantId: $0.merchantId, operationId: $0.operationId), $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The payments' open operations (``open(paymentId:on:)``), by payment, in one statement.
    public func open(paymentIds: [UUID], on connection: PostgresConnection) throws -> [UUID: Operation] {
        guard !paymentIds.isEmpty else { return [:] }
        let operations = try connection.query(
            "SELECT \(Self.columns) FROM \(Self.from) WHERE o.payment_id = ANY($1::uuid[]) AND o.state IN ('requested', 'needs_review')",
            [PostgresArray(paymentIds)]).map(Self.operation(row:))
        return Dictionary(operations.compactMap { operation in operation.paymentId.map { ($0, operation) } }, uniquingKeysWith: { first, _ in first })
    }

    /// The payments operations name (``resolvePayment(_:merchantId:on:)``), in order, in one statement.
    public func resolvePayments(_ references: [(merchantId: String, payment: OperationRequest.PaymentReference)], on connection: PostgresConnection) throws -> [UUID?] {
        guard !references.isEmpty else { return [] }
        let ids = references.map { reference -> UUID? in if case .paymentId(let id) = reference.payment { id } else { nil } }
        let jobs = references.map { reference -> String? in if case .jobId(let job) = reference.payment { job } else { nil } }
        let rows = try connection.query(
            """
            SELECT k.n, coalesce((SELECT p.id FROM payments p WHERE p.id = k.payment_id AND p.merchant_id = k.merchant_id),
                                 (SELECT p.id FROM payments p WHERE p.merchant_id = k.merchant_id AND p.job_id = k.job_id)) AS id
            FROM unnest($1::text[], $2::uuid[], $3::text[]) WITH ORDINALITY AS k(merchant_id, payment_id, job_id, n)
            """, [PostgresArray(references.map(\.merchantId)), PostgresArray(ids), PostgresArray(jobs)])
        var resolved = [UUID?](repeating: nil, count: references.count)
        for row in rows { resolved[Int(try row.decode("n", as: Int64.self)) - 1] = try row.decode("id", as: UUID?.self) }
        return resolved
    }

    /// The payment an operation names, if it is the operation's merchant's: by id (another merchant's payment is
    /// not found), or by the merchant's job id.
    public func resolvePayment(_ reference: OperationRequest.PaymentReference, merchantId: String, on connection: PostgresConnection) throws -> UUID? {
        let rows = switch reference {
        case .paymentId(let id): try connection.query("SELECT id FROM payments WHERE id = $1 AND merchant_id = $2", [id, merchantId])
        case .jobId(let jobId): try connection.query("SELECT id FROM payments WHERE merchant_id = $1 AND job_id = $2", [merchantId, jobId])
        }
        return try rows.first.map { try $0.decode("id", as: UUID.self) }
    }

    /// The AUTH the gateway holds for a payment: its transaction reference and settle status as last learnt (the
    /// payment's recorded settle status, else the answer of the AUTH attempt, or of the status query, that found it
    /// authorised, or the late answer kept as evidence for an attempt that was no longer current). A status query is told
    /// from an AUTH by its outcome: `found` and `stale_found` are written for status queries only (an AUTH's outcome is a
    /// ``GatewayOutcome``), so no processor's request name is needed here.
    public func gatewayFacts(paymentId: UUID, on connection: PostgresConnection) throws -> OperationProtocol.GatewayFacts? {
        try gatewayFacts(paymentIds: [paymentId], on: connection)[paymentId]
    }

    /// ``gatewayFacts(paymentId:on:)`` of several payments in one statement (those without an AUTH reference absent).
    public func gatewayFacts(paymentIds: [UUID], on connection: PostgresConnection) throws -> [UUID: OperationProtocol.GatewayFacts] {
        guard !paymentIds.isEmpty else { return [:] }
        let rows = try connection.query(
            """
            SELECT p.id, a.transaction_reference, coalesce(p.settle_status, a.settle_status) AS settle_status
            FROM payments p
            JOIN LATERAL (SELECT CASE WHEN late THEN late_transaction_reference ELSE transaction_reference END AS transaction_reference,
                                 CASE WHEN late THEN late_settle_status ELSE settle_status END AS settle_status
                          FROM (SELECT *, NOT (transaction_reference IS NOT NULL
                                               AND outcome IN ('authorized', 'found', 'stale_found'))
                                          AS late
                                FROM gateway_attempts WHERE payment_id = p.id) g
                          WHERE NOT late OR (late_outcome = 'authorized' AND late_transaction_reference IS NOT NULL)
                          ORDER BY id DESC LIMIT 1) a ON true
            WHERE p.id = ANY($1::uuid[])
            """, [PostgresArray(paymentIds)])
        var facts: [UUID: OperationProtocol.GatewayFacts] = [:]
        for row in rows {
            guard let reference = try row.decode("transaction_reference", as: String?.self) else { continue }
            facts[try row.decode("id", as: UUID.self)] = OperationProtocol.GatewayFacts(
                transactionReference: reference, settleStatus: SettlementState(storedCode: try row.decode("settle_status", as: String?.self) ?? ""))
        }
        return facts
    }

    // MARK: Writing

    /// Records an operation refused without a gateway call (`failed` with its code), or nothing if the merchant already
    /// has one with this `operationId` (a redelivery, or a conflict the caller reads back). Returns its row id.
    @discardableResult
    public func refuse(
        _ request: OperationRequest, paymentId: UUID?, requestedBy: Requester = .merchant, code: String, reason: String,
        on connection: PostgresConnection
    ) throws -> Int64? {
        try refuse([Refusal(request: request, paymentId: paymentId, requestedBy: requestedBy, code: code, reason: reason)], on: connection)[0]
    }

    /// One operation refused without a gateway call (``refuse(_:on:)``).
    public struct Refusal: Sendable, Equatable {
        public var request: OperationRequest
        public var paymentId: UUID?
        public var requestedBy: Requester
        public var code: String
        public var reason: String

        public init(request: OperationRequest, paymentId: UUID?, requestedBy: Requester = .merchant, code: String, reason: String) {
            (self.request, self.paymentId, self.requestedBy, self.code, self.reason) = (request, paymentId, requestedBy, code, reason)
        }
    }

    /// Records operations refused without a gateway call (``refuse(_:paymentId:requestedBy:code:reason:on:)``) in one
    /// statement: for each, in order, its row id, or nil when the merchant already has an operation with its
    /// `operationId` (nothing written for it). At most one refusal per key (a round holds one message per merchant).
    public func refuse(_ rows: [Refusal], on connection: PostgresConnection) throws -> [Int64?] {
        guard !rows.isEmpty else { return [] }
        let written = try connection.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::text[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::bytea[], $7::int8[], $8::text[], $9::text[])
                    WITH ORDINALITY AS t(merchant_id, operation_id, payment_id, kind, requested_by, content_hash, amount_minor, error_code,
                                         error_message, n)),
            refused AS (
                INSERT INTO payment_operations (merchant_id, operation_id, payment_id, kind, requested_by, content_hash, amount_minor, state,
                                                error_code, error_message, finished_at)
                SELECT merchant_id, operation_id, payment_id, kind, requested_by, content_hash, amount_minor, 'failed', error_code, error_message,
                       clock_timestamp()
                FROM input ORDER BY n
                ON CONFLICT (merchant_id, operation_id) DO NOTHING
                RETURNING id, merchant_id, operation_id)
            SELECT i.n, r.id FROM refused r JOIN input i ON i.merchant_id = r.merchant_id AND i.operation_id = r.operation_id
            """,
            [PostgresArray(rows.map(\.request.merchantId)), PostgresArray(rows.map(\.request.operationId)), PostgresArray(rows.map(\.paymentId)),
             PostgresArray(rows.map(\.request.kind.rawValue)), PostgresArray(rows.map(\.requestedBy.rawValue)),
             PostgresArray(rows.map(\.request.contentHash)), PostgresArray(rows.map(\.request.amount)), PostgresArray(rows.map(\.code)),
             PostgresArray(rows.map(\.reason))])
        var ids = [Int64?](repeating: nil, count: rows.count)
        for row in written { ids[Int(try row.decode("n", as: Int64.self)) - 1] = try row.decode("id", as: Int64.self) }
        return ids
    }

    /// An attempt about to be sent: when its bytes may no longer leave (seconds from now on the database clock) and
    /// how long after that its outcome is settled (the transport's total timeout plus a margin).
    public struct SendTiming: Sendable, Equatable {
        public var sendWindow: Double
        public var settleSeconds: Double

        public init(sendWindow: Double, settleSeconds: Double) {
            self.sendWindow = sendWindow
            self.settleSeconds = settleSeconds
        }
    }

    /// How a decided request is stored, in its processor's terms (from the merchant's ``OperationProtocol/Transport``):
    /// the name it is stored under, and whether it is an update of the payment's settlement (its settle status and
    /// amount stored) rather than a request of the processor's own (a capture's amount stored).
    public struct StoredForm: Sendable, Equatable {
        public var requestType: String
        public var updatesSettlement: Bool

        public init(requestType: String, updatesSettlement: Bool) {
            self.requestType = requestType
            self.updatesSettlement = updatesSettlement
        }
    }

    /// Records a decided operation `requested` with its first `sending` attempt, in one statement; commit before the
    /// call. Nil when the merchant already has an operation with this `operationId` (nothing written). The caller holds
    /// the payment's row lock and found no open operation: the unique open index refuses a second one regardless.
    public func begin(
        _ request: OperationRequest, paymentId: UUID, requestedBy: Requester = .merchant, send: GatewayOperation, stored: StoredForm,
        before: MoneyLifecycle?, effect: OperationProtocol.Effect, timing: SendTiming, on connection: PostgresConnection
    ) throws -> (operation: Int64, attempt: Int64)? {
        try begin([Beginning(request: request, paymentId: paymentId, requestedBy: requestedBy, send: send, stored: stored, before: before,
                             effect: effect, timing: timing)], on: connection)[0]
    }

    /// One operation of ``begin(_:on:)``.
    public struct Beginning: Sendable {
        public var request: OperationRequest
        public var paymentId: UUID
        public var requestedBy: Requester
        public var send: GatewayOperation
        /// How its connector stores it (request name, whether it updates the payment's settlement).
        public var stored: StoredForm
        public var before: MoneyLifecycle?
        public var effect: OperationProtocol.Effect
        public var timing: SendTiming

        public init(request: OperationRequest, paymentId: UUID, requestedBy: Requester, send: GatewayOperation, stored: StoredForm,
                    before: MoneyLifecycle?, effect: OperationProtocol.Effect, timing: SendTiming) {
            (self.request, self.paymentId, self.requestedBy, self.send, self.stored) = (request, paymentId, requestedBy, send, stored)
            (self.before, self.effect, self.timing) = (before, effect, timing)
        }

        /// The request's columns, stored in the processor's terms: the reference it targets, the settle status and
        /// amount an update sets (a settlement-updates processor), a refund's amount, or a capture's own amount.
        var columns: (reference: String, settle: String?, base: Int64?, refund: Int64?, capture: Int64?) {
            let update = stored.updatesSettlement ? send.settlementUpdate : nil
            var (refund, capture): (Int64?, Int64?) = (nil, nil)
            if case .refund(_, let amount) = send { refund = amount }
            if case .capture(_, let amount) = send, update == nil { capture = amount }
            return (send.targetReference, update?.settleStatus?.storedCode, update?.settleAmount, refund, capture)
        }
    }

    /// Records decided operations `requested`, each with its first `sending` attempt, in one statement; commit before
    /// the calls. For each, in order, its ids, or nil when the merchant already has an operation with its
    /// `operationId` (nothing written for it).
    public func begin(_ rows: [Beginning], on connection: PostgresConnection) throws -> [(operation: Int64, attempt: Int64)?] {
        guard !rows.isEmpty else { return [] }
        let columns = rows.map(\.columns)
        let written = try connection.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::text[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::bytea[], $7::int8[], $8::text[], $9::text[],
                                     $10::text[], $11::int8[], $12::int8[], $13::text[], $14::int8[], $15::int8[], $16::text[], $17::int8[],
                                     $18::int8[], $19::text[], $20::int8[], $21::float8[], $22::float8[], $23::int8[])
                    WITH ORDINALITY AS t(merchant_id, operation_id, payment_id, kind, requested_by, content_hash, amount_minor, request_type,
                                         transaction_reference, update_settle_status, update_settle_base_amount, refund_amount,
                                         before_lifecycle, before_captured, before_refunded, after_lifecycle, after_captured, after_refunded,
                                         event_type, event_amount, send_window, settle_seconds, capture_amount, n)),
            operation AS (
                INSERT INTO payment_operations (merchant_id, operation_id, payment_id, kind, requested_by, content_hash, amount_minor, state,
                                                request_type, transaction_reference, update_settle_status, update_settle_base_amount,
                                                refund_amount, before_lifecycle, before_captured, before_refunded, after_lifecycle,
                                                after_captured, after_refunded, event_type, event_amount, capture_amount)
                SELECT merchant_id, operation_id, payment_id, kind, requested_by, content_hash, amount_minor, 'requested', request_type,
                       transaction_reference, update_settle_status, update_settle_base_amount, refund_amount, before_lifecycle, before_captured,
                       before_refunded, after_lifecycle, after_captured, after_refunded, event_type, event_amount, capture_amount
                FROM input ORDER BY n
                ON CONFLICT (merchant_id, operation_id) DO NOTHING
                RETURNING id, merchant_id, operation_id),
            attempt AS (
                INSERT INTO operation_attempts (operation_id, request_type, state, started_at, send_deadline, reconcile_after)
                SELECT o.id, i.request_type, 'sending', t, t + make_interval(secs => i.send_window),
                       t + make_interval(secs => i.send_window + i.settle_seconds)
                FROM operation o JOIN input i ON i.merchant_id = o.merchant_id AND i.operation_id = o.operation_id,
                     (SELECT clock_timestamp() AS t) now
                ORDER BY i.n
                RETURNING id, operation_id)
            SELECT i.n, a.operation_id, a.id FROM attempt a JOIN operation o ON o.id = a.operation_id
                JOIN input i ON i.merchant_id = o.merchant_id AND i.operation_id = o.operation_id
            """,
            [PostgresArray(rows.map(\.request.merchantId)), PostgresArray(rows.map(\.request.operationId)), PostgresArray(rows.map(\.paymentId)),
             PostgresArray(rows.map(\.request.kind.rawValue)), PostgresArray(rows.map(\.requestedBy.rawValue)),
             PostgresArray(rows.map(\.request.contentHash)), PostgresArray(rows.map(\.request.amount)), PostgresArray(rows.map(\.stored.requestType)),
             PostgresArray(columns.map(\.reference)), PostgresArray(columns.map(\.settle)), PostgresArray(columns.map(\.base)),
             PostgresArray(columns.map(\.refund)), PostgresArray(rows.map { $0.before?.status.rawValue }),
             PostgresArray(rows.map { $0.before?.capturedAmount }), PostgresArray(rows.map { $0.before?.refundedAmount }),
             PostgresArray(rows.map(\.effect.lifecycle.status.rawValue)), PostgresArray(rows.map(\.effect.lifecycle.capturedAmount)),
             PostgresArray(rows.map(\.effect.lifecycle.refundedAmount)), PostgresArray(rows.map(\.effect.event.rawValue)),
             PostgresArray(rows.map(\.effect.amount)), PostgresArray(rows.map(\.timing.sendWindow)), PostgresArray(rows.map(\.timing.settleSeconds)),
             PostgresArray(columns.map(\.capture))])
        var ids = [(operation: Int64, attempt: Int64)?](repeating: nil, count: rows.count)
        for row in written {
            ids[Int(try row.decode("n", as: Int64.self)) - 1] = (try row.decode("operation_id", as: Int64.self), try row.decode("id", as: Int64.self))
        }
        return ids
    }

    /// A new `sending` attempt of an operation still `requested` whose last attempt is known not to have reached the
    /// gateway (`not_sent`), or a status query (its connector's) of one whose answer was lost.
    public func beginAttempt(_ operationId: Int64, requestType: String, timing: SendTiming?, on connection: PostgresConnection) throws -> Int64? {
        try beginAttempts([NewAttempt(operation: operationId, requestType: requestType, timing: timing)], on: connection)[0]
    }

    /// One new attempt of ``beginAttempts(_:on:)``: of which operation, stored under which request name, and its send
    /// window (nil: a status query's).
    public struct NewAttempt: Sendable, Equatable {
        public var operation: Int64
        public var requestType: String
        public var timing: SendTiming?

        public init(operation: Int64, requestType: String, timing: SendTiming?) {
            (self.operation, self.requestType, self.timing) = (operation, requestType, timing)
        }
    }

    /// ``beginAttempt(_:requestType:timing:on:)`` of several operations (one attempt each) in one statement: for each,
    /// in order, the attempt's id, or nil when its operation is no longer `requested` (nothing written for it).
    public func beginAttempts(_ rows: [NewAttempt], on connection: PostgresConnection) throws -> [Int64?] {
        guard !rows.isEmpty else { return [] }
        let written = try connection.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::int8[], $2::text[], $3::float8[], $4::float8[]) WITH ORDINALITY AS t(operation_id, request_type, send_window, settle_seconds, n)),
            attempt AS (
                INSERT INTO operation_attempts (operation_id, request_type, state, started_at, send_deadline, reconcile_after)
                SELECT o.id, i.request_type, 'sending', t, t + make_interval(secs => i.send_window),
                       t + make_interval(secs => i.send_window + i.settle_seconds)
                FROM input i JOIN payment_operations o ON o.id = i.operation_id, (SELECT clock_timestamp() AS t) now
                WHERE o.state = 'requested'
                ORDER BY i.n
                RETURNING id, operation_id)
            SELECT i.n, a.id FROM attempt a JOIN input i ON i.operation_id = a.operation_id
            """,
            [PostgresArray(rows.map(\.operation)), PostgresArray(rows.map(\.requestType)), PostgresArray(rows.map { $0.timing?.sendWindow }),
             PostgresArray(rows.map { $0.timing?.settleSeconds })])
        var ids = [Int64?](repeating: nil, count: rows.count)
        for row in written { ids[Int(try row.decode("n", as: Int64.self)) - 1] = try row.decode("id", as: Int64.self) }
        return ids
    }

    /// The id each payment's latest succeeded capture was given by the processor (what a refund of a capture
    /// references), by payment, in one statement (payments without one absent).
    public func captureReferences(paymentIds: [UUID], on connection: PostgresConnection) throws -> [UUID: String] {
        guard !paymentIds.isEmpty else { return [:] }
        let rows = try connection.query(
            """
            SELECT DISTINCT ON (payment_id) payment_id, gateway_reference FROM payment_operations
            WHERE payment_id = ANY($1::uuid[]) AND kind = 'capture' AND state = 'succeeded' AND gateway_reference IS NOT NULL
            ORDER BY payment_id, id DESC
            """, [PostgresArray(paymentIds)])
        var references: [UUID: String] = [:]
        for row in rows { references[try row.decode("payment_id", as: UUID.self)] = try row.decode("gateway_reference", as: String.self) }
        return references
    }

    /// One attempt as stored.
    public struct Attempt: Sendable, Equatable {
        public enum State: String, Sendable, Hashable { case sending, completed, uncertain, notSent = "not_sent" }
        public let id: Int64
        public let requestType: String
        public let state: State
        public let outcome: String?
        public let errorCode: String?
        public let transactionReference: String?
        public let settleStatus: String?
        public let settleBaseAmount: Int64?
        public let reconcileAfter: Date?
    }

    private static let attemptColumns = "id, request_type, state, outcome, error_code, transaction_reference, settle_status, settle_base_amount, reconcile_after"

    static func attempt(row: PostgresRow) throws -> Attempt {
        let stateText = try row.decode("state", as: String.self)
        guard let state = Attempt.State(rawValue: stateText) else {
            throw PostgresError.decoding(column: "state", expected: "Attempt.State", reason: "unknown state '\(stateText)'")
        }
        return Attempt(id: try row.decode("id", as: Int64.self), requestType: try row.decode("request_type", as: String.self), state: state,
                       outcome: try row.decode("outcome", as: String?.self), errorCode: try row.decode("error_code", as: String?.self),
                       transactionReference: try row.decode("transaction_reference", as: String?.self),
                       settleStatus: try row.decode("settle_status", as: String?.self),
                       settleBaseAmount: try row.decode("settle_base_amount", as: Int64?.self),
                       reconcileAfter: try row.decode("reconcile_after", as: Date?.self))
    }

    /// The operation's attempts, oldest first.
    public func attempts(_ operationId: Int64, on connection: PostgresConnection) throws -> [Attempt] {
        try connection.query("SELECT \(Self.attemptColumns) FROM operation_attempts WHERE operation_id = $1 ORDER BY id", [operationId])
            .map(Self.attempt(row:))
    }

    /// The attempts of `operations`, oldest first, by operation, in one statement.
    public func attempts(operations: [Int64], on connection: PostgresConnection) throws -> [Int64: [Attempt]] {
        guard !operations.isEmpty else { return [:] }
        let rows = try connection.query(
            "SELECT operation_id, \(Self.attemptColumns) FROM operation_attempts WHERE operation_id = ANY($1::int8[]) ORDER BY id",
            [PostgresArray(operations)])
        return try rows.reduce(into: [:]) { attempts, row in
            attempts[try row.decode("operation_id", as: Int64.self), default: []].append(try Self.attempt(row: row))
        }
    }

    /// The attempts `ids` (of any operations), by id, in one statement.
    public func attempts(ids: [Int64], on connection: PostgresConnection) throws -> [Int64: Attempt] {
        guard !ids.isEmpty else { return [:] }
        let attempts = try connection.query("SELECT \(Self.attemptColumns) FROM operation_attempts WHERE id = ANY($1::int8[])", [PostgresArray(ids)])
            .map(Self.attempt(row:))
        return Dictionary(attempts.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// What an answer (or the failure to get one) writes into its attempt.
    public struct AttemptAnswer: Sendable, Equatable {
        public var state: Attempt.State
        public var outcome: String
        public var errorCode: String?
        public var errorMessage: String?
        public var transactionReference: String?
        public var settleStatus: String?
        public var settleBaseAmount: Int64?

        public init(state: Attempt.State, outcome: String, errorCode: String? = nil, errorMessage: String? = nil,
                    transactionReference: String? = nil, settleStatus: String? = nil, settleBaseAmount: Int64? = nil) {
            (self.state, self.outcome, self.errorCode, self.errorMessage) = (state, outcome, errorCode, errorMessage)
            (self.transactionReference, self.settleStatus, self.settleBaseAmount) = (transactionReference, settleStatus, settleBaseAmount)
        }
    }

    /// Raised when the attempt an answer is for was no longer open: another consumer settled it; nothing is written
    /// (the transaction rolls back).
    public struct NotCurrent: Error, CustomStringConvertible {
        public let attemptId: Int64
        public var description: String { "operation attempt \(attemptId) is no longer open" }

        public init(attemptId: Int64) { self.attemptId = attemptId }
    }

    /// Writes an attempt's answer; only while it is still `sending` or `uncertain`.
    public func finishAttempt(_ attemptId: Int64, _ answer: AttemptAnswer, on connection: PostgresConnection) throws {
        try finishAttempts([(attemptId, answer)], on: connection)
    }

    /// An attempt's answer as ``finishAttempts(_:on:)`` writes it.
    public typealias AttemptWrite = (id: Int64, written: AttemptAnswer)

    /// Writes each attempt's answer in one statement, only while it is still `sending` or `uncertain`; if any one was
    /// no longer open, throws ``NotCurrent`` for it (the caller's transaction rolls back, nothing is kept).
    public func finishAttempts(_ answers: [AttemptWrite], on connection: PostgresConnection) throws {
        guard !answers.isEmpty else { return }
        let rows = try connection.query(
            """
            UPDATE operation_attempts a
            SET state = i.state, outcome = i.outcome, error_code = i.error_code, error_message = i.error_message,
                transaction_reference = i.transaction_reference, settle_status = i.settle_status, settle_base_amount = i.settle_base_amount,
                finished_at = CASE WHEN i.state = 'uncertain' THEN NULL ELSE clock_timestamp() END
            FROM unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int8[])
                AS i(id, state, outcome, error_code, error_message, transaction_reference, settle_status, settle_base_amount)
            WHERE a.id = i.id AND a.state IN ('sending', 'uncertain')
            RETURNING a.id
            """,
            [PostgresArray(answers.map(\.id)), PostgresArray(answers.map(\.written.state.rawValue)), PostgresArray(answers.map(\.written.outcome)),
             PostgresArray(answers.map(\.written.errorCode)), PostgresArray(answers.map { $0.written.errorMessage.map { String($0.prefix(500)) } }),
             PostgresArray(answers.map(\.written.transactionReference)), PostgresArray(answers.map(\.written.settleStatus)),
             PostgresArray(answers.map(\.written.settleBaseAmount))])
        let written = Set(try rows.map { try $0.decode("id", as: Int64.self) })
        if let stale = answers.first(where: { !written.contains($0.id) }) { throw NotCurrent(attemptId: stale.id) }
    }

    /// Ends a `requested` operation as the gateway confirmed it: the payment's lifecycle moves to the decided effect
    /// (through ``PaymentStore``, checked by ``CheckedLifecycleChange`` and guarded by the state decided on), then the
    /// operation is `succeeded`. False when the operation or the payment was not in the expected state (nothing written).
    /// The caller holds the payment's row lock.
    public func succeed(
        _ operation: Operation, gatewayReference: String?, settleStatus: SettlementState?, actor: String, on connection: PostgresConnection
    ) throws -> Bool {
        guard operation.state == .requested, let paymentId = operation.paymentId, let effect = operation.effect else { return false }
        if let before = operation.before {
            let change = try CheckedLifecycleChange(from: before, to: effect.lifecycle)
            let detail = "\(operation.kind.rawValue) \(operation.operationId): \(effect.event.rawValue) \(effect.amount)"
            guard try PaymentStore().changeLifecycle(paymentId, change, settleStatus: settleStatus, actor: actor,
                                                     operationId: operation.operationId, detail: detail, on: connection) else { return false }
        }
        return try end(operation.id, state: .succeeded, gatewayReference: gatewayReference, code: nil, reason: nil, on: connection)
    }

    /// Ends an open operation `failed` (the gateway refused it, or an operator closed a review) with its code; the
    /// payment's lifecycle is unchanged.
    @discardableResult
    public func fail(_ operationId: Int64, code: String, reason: String, on connection: PostgresConnection) throws -> Bool {
        try end(operationId, state: .failed, gatewayReference: nil, code: code, reason: reason, on: connection)
    }

    /// Puts a `requested` operation up for review with its code; the payment takes no other operation meanwhile.
    @discardableResult
    public func review(_ operationId: Int64, code: String, reason: String, on connection: PostgresConnection) throws -> Bool {
        try end([Ending(operation: operationId, state: .needsReview, code: code, reason: reason)], on: connection) == [operationId]
    }

    private func end(_ id: Int64, state: State, gatewayReference: String?, code: String?, reason: String?, on connection: PostgresConnection) throws -> Bool {
        try end([Ending(operation: id, state: state, gatewayReference: gatewayReference, code: code, reason: reason)], on: connection) == [id]
    }

    /// How an operation ends (``end(_:on:)``): `succeeded` or `failed` from `requested` or `needs_review`, or
    /// `needs_review` from `requested` (a review keeps the operation open).
    public struct Ending: Sendable, Equatable {
        public let operation: Int64
        public let state: State
        public let gatewayReference: String?
        public let code: String?
        public let reason: String?

        public init(operation: Int64, state: State, gatewayReference: String? = nil, code: String?, reason: String?) {
            (self.operation, self.state, self.gatewayReference, self.code, self.reason) = (operation, state, gatewayReference, code, reason)
        }
    }

    /// Ends each operation as its ``Ending`` says, in one statement; returns the operations written (one in another
    /// state is left as it is).
    public func end(_ endings: [Ending], on connection: PostgresConnection) throws -> Set<Int64> {
        guard !endings.isEmpty else { return [] }
        let rows = try connection.query(
            """
            UPDATE payment_operations o
            SET state = i.state, gateway_reference = coalesce(i.gateway_reference, o.gateway_reference), error_code = i.error_code,
                error_message = i.error_message, finished_at = CASE WHEN i.state = 'needs_review' THEN o.finished_at ELSE clock_timestamp() END
            FROM unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[]) AS i(id, state, gateway_reference, error_code, error_message)
            WHERE o.id = i.id AND (o.state = 'requested' OR (o.state = 'needs_review' AND i.state <> 'needs_review'))
            RETURNING o.id
            """,
            [PostgresArray(endings.map(\.operation)), PostgresArray(endings.map(\.state.rawValue)), PostgresArray(endings.map(\.gatewayReference)),
             PostgresArray(endings.map(\.code)), PostgresArray(endings.map { $0.reason.map { String($0.prefix(500)) } })])
        return Set(try rows.map { try $0.decode("id", as: Int64.self) })
    }

    /// Marks a finished operation's event as handed to notification.
    public func markNotified(_ id: Int64, on connection: PostgresConnection) throws {
        try connection.query("UPDATE payment_operations SET notified_at = clock_timestamp() WHERE id = $1 AND notified_at IS NULL", [id])
    }
}
