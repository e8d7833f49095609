import Foundation
import Pipeline
import Postgres

/// The operations stage's part of ``Pipeline/OperationStore``, kept with the stage that runs it (as submit's part of
/// ``Pipeline/PaymentStore``): the batch read a plan is decided on (operations by key and open by payment, the payments
/// operations name, the AUTH's facts, the capture references refunds need), then what the plan commits before any
/// call (refusals, operations begun with their `sending` attempt, new attempts). `OperationStore` stays the one writer
/// of `payment_operations` and `operation_attempts`.
extension OperationStore {
    /// The merchant's operation with this `operationId`, on any payment.
    public func find(merchantId: String, operationId: String, on connection: PostgresConnection) throws -> Operation? {
        try connection.query("SELECT \(Self.columns) FROM \(Self.from) WHERE o.merchant_id = $1 AND o.operation_id = $2",
                             [merchantId, operationId]).first.map(Self.operation(row:))
    }

    /// The payment's operation still open (`requested` or `needs_review`), if any: at most one, by the unique index.
    public func open(paymentId: UUID, on connection: PostgresConnection) throws -> Operation? {
        try connection.query("SELECT \(Self.columns) FROM \(Self.from) WHERE o.payment_id = $1 AND o.state IN ('requested', 'needs_review')",
                             [paymentId]).first.map(Self.operation(row:))
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
}
