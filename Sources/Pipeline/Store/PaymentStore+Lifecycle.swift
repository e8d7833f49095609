import Foundation
import Postgres

/// A lifecycle change a statement is about to write, already checked against ``MoneyLifecycle``: the only way
/// ``PaymentStore/changeLifecycle(_:_:settleStatus:actor:operationId:detail:on:)`` obtains what it binds, so no statement
/// writes a state outside the diagram or one breaking the invariants (the database checks the same again).
public struct CheckedLifecycleChange: Sendable, Equatable {
    public let from: MoneyLifecycle
    public let to: MoneyLifecycle

    public struct Illegal: Error, Equatable, CustomStringConvertible {
        public let from: MoneyLifecycle
        public let to: MoneyLifecycle
        public var description: String {
            "illegal lifecycle change \(from.status.rawValue)(\(from.capturedAmount)/\(from.refundedAmount)) → "
                + "\(to.status.rawValue)(\(to.capturedAmount)/\(to.refundedAmount))"
        }
    }

    public init(from: MoneyLifecycle, to: MoneyLifecycle) throws(Illegal) {
        guard from.isConsistent, to.isConsistent, from.status.successors.contains(to.status),
              to.authorizedAmount == from.authorizedAmount, to.refundedAmount >= from.refundedAmount,
              from.status == .authorized || to.capturedAmount <= from.capturedAmount,
              !from.status.isSettled || to.capturedAmount == from.capturedAmount else {
            throw Illegal(from: from, to: to)
        }
        self.from = from
        self.to = to
    }
}

/// The money lifecycle of authorised payments (migration 7): read under the payment's row lock and changed by
/// operations (and the settlement poll), each change a ``CheckedLifecycleChange`` guarded in SQL by the state it
/// expects (compare-and-set), with its audit event in the same statement.
extension PaymentStore {
    /// The lifecycle columns, as ``lifecycle(row:)`` reads them.
    static let lifecycleColumns = """
        status, lifecycle, capture_mode, authorized_minor, captured_minor, refunded_minor, capture_deadline, settle_status
        """

    /// A payment's money state as read (under lock when asked): the AUTH pipeline's status, its lifecycle (present once
    /// `authorized`), and the settle status last learnt from the gateway (nil: the AUTH's own answer stands).
    public struct MoneyState: Sendable, Equatable {
        public let status: PaymentStatus
        public let lifecycle: MoneyLifecycle?
        public let settleStatus: SettleStatus?
    }

    static func money(row: PostgresRow) throws -> MoneyState {
        let statusText = try row.decode("status", as: String.self)
        guard let status = PaymentStatus(rawValue: statusText) else {
            throw PostgresError.decoding(column: "status", expected: "PaymentStatus", reason: "unknown status '\(statusText)'")
        }
        let settle = try row.decode("settle_status", as: String?.self).map(SettleStatus.init)
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
        _ paymentId: UUID, _ change: CheckedLifecycleChange, settleStatus: SettleStatus?, actor: String, operationId: String?,
        detail: String?, on connection: PostgresConnection
    ) throws -> Bool {
        let (from, to) = (change.from, change.to)
        let authorized = PaymentStatus.authorized.rawValue
        let rows = try connection.query(
            """
            WITH updated AS (
                UPDATE payments SET lifecycle = $5, captured_minor = $6, refunded_minor = $7,
                       settle_status = COALESCE($8, settle_status), updated_at = clock_timestamp()
                WHERE id = $1 AND status = $9 AND lifecycle = $2 AND captured_minor = $3 AND refunded_minor = $4
                RETURNING id, stage)
            INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor, detail, lifecycle_from, lifecycle_to, operation_id)
            SELECT id, $9, $9, stage, $10, $11, $2, $5, $12 FROM updated
            """,
            [paymentId, from.status.rawValue, from.capturedAmount, from.refundedAmount, to.status.rawValue, to.capturedAmount,
             to.refundedAmount, settleStatus?.wireValue, authorized, actor, detail, operationId])
        return rows.affectedRows == 1
    }

    /// Records that a settlement query found nothing to learn (the record was not returned).
    public func markSettlementChecked(_ paymentId: UUID, on connection: PostgresConnection) throws {
        try connection.query("UPDATE payments SET settle_checked_at = clock_timestamp() WHERE id = $1", [paymentId])
    }

    /// Records the settle status a status query returned, without a lifecycle change (see ``changeLifecycle`` for
    /// `captured → settled`).
    public func recordSettleStatus(_ paymentId: UUID, _ settleStatus: SettleStatus, on connection: PostgresConnection) throws {
        try connection.query(
            "UPDATE payments SET settle_status = $2, settle_checked_at = clock_timestamp() WHERE id = $1 AND status = $3",
            [paymentId, settleStatus.wireValue, PaymentStatus.authorized.rawValue])
    }
}
