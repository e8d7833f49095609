import Foundation
import Postgres

/// ``PaymentStore``'s statements on a payment's later life, outside the stages' batches: one payment read and moved
/// at a time (the CLI, a failure recorded alone), and the money lifecycle of
/// authorised payments (operations and the settlement poll).
extension PaymentStore {
    /// Outcome of a guarded transition.
    public enum TransitionResult: Sendable, Equatable {
        case applied
        /// The payment was not in the expected status (a redelivery or a race): nothing changed.
        case statusWas(PaymentStatus)
    }

    public func load(_ paymentId: UUID, forUpdate: Bool = false, on connection: PostgresConnection) throws -> PaymentRecord? {
        let lock = forUpdate ? " FOR UPDATE" : ""
        let rows = try connection.query("SELECT \(PaymentRecord.columns) FROM payments WHERE id = $1\(lock)", [paymentId])
        return try rows.first.map(PaymentRecord.init(row:))
    }

    /// Moves a payment from `from` to `to`, recording an audit event, or reports the status it had instead.
    /// The stage follows from the new status (terminal statuses queue for notification).
    @discardableResult
    public func transition(
        _ paymentId: UUID, from: PaymentStatus, to: PaymentStatus, actor: String,
        errorCode: String? = nil, detail: String? = nil, on connection: PostgresConnection
    ) throws -> TransitionResult {
        let checked = try CheckedTransition(from: from, to: to)
        // The guarded update and its audit event in one statement (one round trip): the event row exists exactly
        // when the update matched.
        let updated = try connection.query(
            """
            WITH updated AS (
                UPDATE payments SET status = $3, stage = $4, updated_at = clock_timestamp(),
                       error_code = COALESCE($5, error_code), error_message = COALESCE($6, error_message)
                WHERE id = $1 AND status = $2
                RETURNING id)
            INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor, error_code, detail)
            SELECT id, $2, $3, $4, $7, $5, $8 FROM updated
            """,
            [paymentId, from.rawValue, checked.to.rawValue, checked.stage.rawValue, errorCode, errorCode == nil ? nil : detail, actor, detail])
        guard updated.affectedRows == 1 else {
            guard let current = try load(paymentId, on: connection) else {
                throw StageFailure.unattributable(code: "unknown_payment", reason: "payment \(paymentId) does not exist")
            }
            return .statusWas(current.status)
        }
        return .applied
    }

    /// Ends a payment `failed` with the failure's code and reason, unless it is already terminal (a
    /// redelivery), and returns the hand-off to notification either way.
    public func recordFailure(_ failure: PaymentFailure, on connection: PostgresConnection) throws -> StageMessage {
        guard let payment = try load(failure.paymentId, forUpdate: true, on: connection) else {
            throw StageFailure.unattributable(code: "unknown_payment", reason: "payment \(failure.paymentId) does not exist")
        }
        if !payment.status.isTerminal {
            // A `submitting` payment may have an AUTH at the gateway: it never simply fails, a person must look.
            let target: PaymentStatus = payment.status == .submitting ? .needsReview : .failed
            try transition(payment.id, from: payment.status, to: target, actor: "pipeline",
                           errorCode: failure.code, detail: failure.reason, on: connection)
        }
        return payment.message
    }
}

/// The money lifecycle of authorised payments (migration 7): read under the payment's row lock and changed by
/// operations (and the settlement poll), each change a ``CheckedLifecycleChange`` guarded in SQL by the state it
/// expects (compare-and-set), with its audit event in the same statement.
extension PaymentStore {
    /// The lifecycle columns, as ``money(row:)`` reads them.
    static let lifecycleColumns = """
        status, lifecycle, capture_mode, authorized_minor, captured_minor, refunded_minor, capture_deadline, settle_status
        """

    /// A payment's record and money state (``PaymentRecord/columns``, ``lifecycleColumns``) for a query that joins the
    /// `payments` row aliased `table` to rows whose columns share its names: each selected as `<prefix><name>`, which
    /// ``PaymentRecord/init(row:)`` and ``money(row:)`` read through the row's ``Postgres/PostgresRow/prefixed(_:)`` view.
    package static func recordAndMoneyColumns(of table: String, prefixedWith prefix: String) -> String {
        var seen = Set<String>()
        return (PaymentRecord.columns + "," + lifecycleColumns).split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .filter { seen.insert($0).inserted }
            .map { "\(table).\($0) AS \(prefix)\($0)" }.joined(separator: ", ")
    }

    /// A payment's money state as read (under lock when asked): the AUTH pipeline's status, its lifecycle (present once
    /// `authorized`), and the settle status last learnt from the gateway (nil: the AUTH's own answer stands).
    public struct MoneyState: Sendable, Equatable {
        public let status: PaymentStatus
        public let lifecycle: MoneyLifecycle?
        public let settleStatus: SettlementState?
    }

    package static func money(row: PostgresRow) throws -> MoneyState {
        let status = try row.decodeChoice("status", as: PaymentStatus.self)
        let settle = try row.decode("settle_status", as: String?.self).map(SettlementState.init(storedCode:))
        guard let lifecycleText = try row.decode("lifecycle", as: String?.self) else {
            return MoneyState(status: status, lifecycle: nil, settleStatus: settle)
        }
        guard let lifecycle = LifecycleStatus(rawValue: lifecycleText),
              let mode = CaptureMode(rawValue: try row.decode("capture_mode", as: String.self)) else {
            throw PostgresError.decoding(column: "lifecycle", expected: "LifecycleStatus", reason: "unknown lifecycle '\(lifecycleText)'")
        }
        return MoneyState(status: status, lifecycle: MoneyLifecycle(
            status: lifecycle, captureMode: mode, authorizedAmount: try row.decode("authorized_minor", as: Int64.self),
            capturedAmount: try row.decode("captured_minor", as: Int64.self), refundedAmount: try row.decode("refunded_minor", as: Int64.self),
            captureDeadline: try row.decode("capture_deadline", as: Date?.self)), settleStatus: settle)
    }

    /// The payment's money state; with `forUpdate`, its row stays locked until the transaction ends, so every
    /// operation of the payment is decided on a state no other can change meanwhile.
    public func money(_ paymentId: UUID, forUpdate: Bool, on connection: PostgresConnection) throws -> MoneyState? {
        let rows = try connection.query(
            "SELECT \(Self.lifecycleColumns) FROM payments WHERE id = $1\(forUpdate ? " FOR UPDATE" : "")", [paymentId])
        return try rows.first.map(Self.money(row:))
    }

    /// How a payment not yet authorised will be captured (`CapturePolicy`, the job's over the merchant's); read by the
    /// lifecycle trigger when the payment becomes `authorized`. Only before that: false once it is.
    @discardableResult
    public func setCapturePolicy(_ paymentId: UUID, _ policy: CapturePolicy, on connection: PostgresConnection) throws -> Bool {
        try connection.query(
            "UPDATE payments SET capture_mode = $2, capture_within_seconds = $3 WHERE id = $1 AND lifecycle IS NULL AND status <> $4",
            [paymentId, policy.mode.rawValue, policy.captureWithin, PaymentStatus.authorized.rawValue]).affectedRows == 1
    }

    /// Writes `change` if the payment still has its `from` state (status `authorized`, lifecycle and amounts as
    /// expected), with `settleStatus` as the settle status now known, and audits it; false when the payment had
    /// another state (a race or a stale decision: nothing written).
    @discardableResult
    public func changeLifecycle(
        _ paymentId: UUID, _ change: CheckedLifecycleChange, settleStatus: SettlementState?, actor: String, operationId: String?,
        detail: String?, on connection: PostgresConnection
    ) throws -> Bool {
        let changing = LifecycleChanging(paymentId: paymentId, change: change, settleStatus: settleStatus, operationId: operationId, detail: detail)
        return try changeLifecycles([changing], actor: actor, on: connection) == [paymentId]
    }

    /// What a settlement query (or a suspension) learnt of one payment: the settle status now known, or nil when the
    /// query found nothing to learn (the record was not returned).
    public typealias SettleStatusLearnt = (paymentId: UUID, settleStatus: SettlementState?)

    /// Records what settlement queries learnt, in one statement: each payment is stamped checked; a settle status
    /// learnt is kept on a payment still `authorized` (without a lifecycle change: see ``changeLifecycles(_:actor:on:)``
    /// for `captured → settled`).
    public func recordSettleStatuses(_ rows: [SettleStatusLearnt], on connection: PostgresConnection) throws {
        guard !rows.isEmpty else { return }
        try connection.query(
            """
            UPDATE payments p SET settle_status = coalesce(i.settle_status, p.settle_status), settle_checked_at = clock_timestamp()
            FROM unnest($1::uuid[], $2::text[]) AS i(id, settle_status)
            WHERE p.id = i.id AND (i.settle_status IS NULL OR p.status = $3)
            """,
            [PostgresArray(rows.map(\.paymentId)), PostgresArray(rows.map { $0.settleStatus?.storedCode }), PaymentStatus.authorized.rawValue])
    }
}

/// The operations record phase's set-based statements: a round's payments locked and read at once, its lifecycle
/// changes written at once (``changeLifecycle`` is one of them).
extension PaymentStore {
    /// A payment's row and money state, read together under its row lock (the operations record phase).
    public struct LockedPayment: Sendable, Equatable {
        public let record: PaymentRecord
        public let money: MoneyState
    }

    /// Locks the payments `ids` in id order (one statement; every round takes its locks in the same order) and reads
    /// each row with its money state. Missing payments are absent from the answer.
    public func lock(_ ids: [UUID], on transaction: PostgresConnection) throws -> [UUID: LockedPayment] {
        guard !ids.isEmpty else { return [:] }
        let rows = try transaction.query(
            """
            SELECT \(PaymentRecord.columns), lifecycle, authorized_minor, captured_minor, refunded_minor, capture_deadline, settle_status
            FROM payments WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE
            """, [PostgresArray(ids)])
        return try Dictionary(rows.map { row in
            let record = try PaymentRecord(row: row)
            return (record.id, LockedPayment(record: record, money: try Self.money(row: row)))
        }, uniquingKeysWith: { first, _ in first })
    }

    /// One checked lifecycle change of ``changeLifecycles(_:actor:on:)``.
    public struct LifecycleChanging: Sendable, Equatable {
        public let paymentId: UUID
        public let change: CheckedLifecycleChange
        /// The settle status now known, if the change brings one.
        public let settleStatus: SettlementState?
        public let operationId: String?
        public let detail: String?

        public init(paymentId: UUID, change: CheckedLifecycleChange, settleStatus: SettlementState?, operationId: String?, detail: String?) {
            (self.paymentId, self.change, self.settleStatus, self.operationId, self.detail) = (paymentId, change, settleStatus, operationId, detail)
        }
    }

    /// Writes each change whose payment still has its `from` state (status `authorized`, lifecycle and amounts as
    /// expected), with its settle status, and audits it, in one statement; returns the payments changed (a payment
    /// with another state is left as it is: a race or a stale decision).
    public func changeLifecycles(_ rows: [LifecycleChanging], actor: String, on connection: PostgresConnection) throws -> Set<UUID> {
        guard !rows.isEmpty else { return [] }
        let updated = try connection.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::text[], $3::int8[], $4::int8[], $5::text[], $6::int8[], $7::int8[], $8::text[],
                                     $9::text[], $10::text[])
                    WITH ORDINALITY AS t(id, from_lifecycle, from_captured, from_refunded, to_lifecycle, to_captured, to_refunded,
                                         settle_status, operation_id, detail, n)),
            updated AS (
                UPDATE payments p SET lifecycle = i.to_lifecycle, captured_minor = i.to_captured, refunded_minor = i.to_refunded,
                       settle_status = COALESCE(i.settle_status, p.settle_status), updated_at = clock_timestamp()
                FROM input i
                WHERE p.id = i.id AND p.status = $11 AND p.lifecycle = i.from_lifecycle AND p.captured_minor = i.from_captured
                  AND p.refunded_minor = i.from_refunded
                RETURNING p.id, p.stage, i.n, i.from_lifecycle, i.to_lifecycle, i.operation_id, i.detail),
            events AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor, detail, lifecycle_from, lifecycle_to, operation_id)
                SELECT id, $11, $11, stage, $12, detail, from_lifecycle, to_lifecycle, operation_id FROM updated ORDER BY n)
            SELECT id FROM updated
            """,
            [PostgresArray(rows.map(\.paymentId)), PostgresArray(rows.map(\.change.from.status.rawValue)),
             PostgresArray(rows.map(\.change.from.capturedAmount)), PostgresArray(rows.map(\.change.from.refundedAmount)),
             PostgresArray(rows.map(\.change.to.status.rawValue)), PostgresArray(rows.map(\.change.to.capturedAmount)),
             PostgresArray(rows.map(\.change.to.refundedAmount)), PostgresArray(rows.map { $0.settleStatus?.storedCode }),
             PostgresArray(rows.map(\.operationId)), PostgresArray(rows.map(\.detail)), PaymentStatus.authorized.rawValue, actor])
        return Set(try updated.map { try $0.decode("id", as: UUID.self) })
    }
}

/// How a ``SettlementState`` is stored (`payments.settle_status`, `gateway_attempts.settle_status`,
/// `operation_attempts.settle_status`, `payment_operations.update_settle_status`) and shown (`paypipe payment show`'s
/// `settleStatus`): by these codes, the values stored since operations began. `gateway_attempts.settle_status` holds
/// what the processor answered as it answered it, and is read with the same table, so the connector that records such
/// an answer maps its processor's values exactly to these codes (its folder's test pins every value).
extension SettlementState {
    public init(storedCode: String) {
        self = Self.named.first { $0.storedCode == storedCode } ?? .other(storedCode)
    }

    public var storedCode: String {
        switch self {
        case .pendingSettlement: "0"
        case .pendingManualSettlement: "1"
        case .suspended: "2"
        case .cancelled: "3"
        case .settling: "10"
        case .settled: "100"
        case .other(let text): text
        }
    }
}
