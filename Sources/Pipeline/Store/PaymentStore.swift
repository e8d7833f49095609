import Foundation
import Postgres

/// SQL for the `payments` table and its audit trail; a row of it is a ``PaymentRecord`` (below). Stateless: every
/// method takes the connection (usually inside a transaction) so callers decide transaction boundaries.
///
/// The one writer of `payments` and `payment_events`, as extensions of this type by what they serve, so a reader opens
/// only the statements its code calls: this file, the set-based statements several stages share; each stage's own
/// with the stage (`PaymentStages/<Stage>/PaymentStore+<Stage>.swift`); one payment at a time and the money lifecycle
/// (PaymentStore+Lifecycle.swift: the CLI, notify's marks, operations); deferred amounts (PaymentStore+DeferredAmount.swift).
/// Every status a statement writes comes from a ``CheckedTransition``, so it was checked against
/// ``PaymentStateMachine``, every lifecycle from a ``CheckedLifecycleChange``, and the same change is guarded in SQL by
/// the state it expects.
public struct PaymentStore: Sendable {
    public init() {}
}

/// A row of `payments`, without card data (which lives encrypted in `card_data`).
public struct PaymentRecord: Sendable, Equatable {
    public let id: UUID
    public let merchantId: String
    public let jobId: String
    public let orderReference: String?
    public let amountMinor: Int64?
    public let currency: String?
    public let status: PaymentStatus
    public let stage: PaymentStage
    public let errorCode: String?
    public let errorMessage: String?
    public let firstReceivedAt: Date
    public let updatedAt: Date
    /// How its AUTH is captured (migration 7; `automatic` before it).
    public let captureMode: CaptureMode

    /// The hand-off message that addresses this payment.
    public var message: StageMessage { StageMessage(paymentId: id, merchantId: merchantId, jobId: jobId) }

    /// The column list matching ``init(row:)``, for `SELECT`/`RETURNING` clauses.
    public static let columns = """
        id, merchant_id, job_id, order_reference, amount_minor, currency, status, stage,
        error_code, error_message, first_received_at, updated_at, capture_mode
        """

    public init(row: PostgresRow) throws {
        id = try row.decode("id", as: UUID.self)
        merchantId = try row.decode("merchant_id", as: String.self)
        jobId = try row.decode("job_id", as: String.self)
        orderReference = try row.decode("order_reference", as: String?.self)
        amountMinor = try row.decode("amount_minor", as: Int64?.self)
        currency = try row.decode("currency", as: String?.self)
        status = try row.decodeChoice("status", as: PaymentStatus.self)
        stage = try row.decodeChoice("stage", as: PaymentStage.self)
        errorCode = try row.decode("error_code", as: String?.self)
        errorMessage = try row.decode("error_message", as: String?.self)
        firstReceivedAt = try row.decode("first_received_at", as: Date.self)
        updatedAt = try row.decode("updated_at", as: Date.self)
        captureMode = CaptureMode(rawValue: try row.decode("capture_mode", as: String.self)) ?? .automatic
    }
}

/// A status change a statement is about to write, already checked against ``PaymentStateMachine``: the only way the
/// store's statements obtain the status and stage values they bind, so no statement can write a transition the state
/// machine forbids, nor a status or stage spelled as an SQL literal.
public struct CheckedTransition: Sendable, Equatable {
    /// `nil` when the payment is created (its first audit event, `NULL → received`).
    public let from: PaymentStatus?
    public let to: PaymentStatus

    /// The stage the new status queues the payment for.
    public var stage: PaymentStage { PaymentStage(to.stage) }

    public init(from: PaymentStatus, to: PaymentStatus) throws(PaymentStateMachine.IllegalTransition) {
        try PaymentStateMachine.validate(from: from, to: to)
        self.from = from
        self.to = to
    }

    private init(creating status: PaymentStatus) {
        self.from = nil
        self.to = status
    }

    /// A new payment's row and first event.
    public static let creation = CheckedTransition(creating: PaymentStateMachine.initialStatus)

    /// Checks one transition per row of a set-based statement, in row order; the first illegal one throws before
    /// anything is written.
    public static func checkEach(_ pairs: [(from: PaymentStatus, to: PaymentStatus)]) throws(PaymentStateMachine.IllegalTransition) -> [CheckedTransition] {
        var checked: [CheckedTransition] = []
        checked.reserveCapacity(pairs.count)
        for pair in pairs { checked.append(try CheckedTransition(from: pair.from, to: pair.to)) }
        return checked
    }
}

/// The set-based statements of ``PaymentStore`` that several stages share (a batch of failures, the reconciler's claim):
/// each carries a whole batch as array parameters and writes the payments and their audit events in one statement.
/// Every transition is a ``CheckedTransition``. Each stage's own statements live with the stage, still as `PaymentStore`
/// (the one writer of `payments`): `PaymentStages/Decrypt/PaymentStore+Decrypt.swift`, `Authorize/AuthorizeStage.swift` (beside its lock read),
/// `Submit/PaymentStore+Submit.swift`, `Notify/PaymentStore+Notify.swift`.
extension PaymentStore {
    /// The actor of every recorded failure's event.
    package static let failureActor = "pipeline"

    /// A payment a stage decided to fail: its checked transition and the rejection.
    public struct Failing: Sendable {
        public let paymentId: UUID
        public let checked: CheckedTransition
        public let rejection: Rejection

        public init(paymentId: UUID, from: PaymentStatus, rejection: Rejection) throws(PaymentStateMachine.IllegalTransition) {
            self.paymentId = paymentId
            // A `submitting` payment may have an AUTH at the gateway: it never simply fails, a person must look.
            self.checked = try CheckedTransition(from: from, to: from == .submitting ? .needsReview : .failed)
            self.rejection = rejection
        }
    }

    /// Ends the payments still in their transitions' `from` status with the rejections' codes and reasons (the event's
    /// actor is `pipeline`, as for every recorded failure), in one statement; returns the ids of those it changed. The
    /// `payments_terminal_purge` trigger shreds their card data and requests.
    public func fail(_ rows: [Failing], on transaction: PostgresConnection) throws -> Set<UUID> {
        try transitionBatch(rows.map { Transitioning(paymentId: $0.paymentId, transition: $0.checked, errorCode: $0.rejection.code, detail: $0.rejection.reason) },
                            actor: Self.failureActor, on: transaction)
    }

    /// A guarded transition of one payment of a batch: ``PaymentStore/transition(_:from:to:actor:errorCode:detail:on:)``
    /// as a row.
    public struct Transitioning: Sendable {
        public let paymentId: UUID
        public let checked: CheckedTransition
        public let errorCode: String?
        public let detail: String?

        public init(paymentId: UUID, from: PaymentStatus, to: PaymentStatus, errorCode: String? = nil, detail: String? = nil)
            throws(PaymentStateMachine.IllegalTransition) {
            self.paymentId = paymentId
            self.checked = try CheckedTransition(from: from, to: to)
            self.errorCode = errorCode
            self.detail = detail
        }

        public init(paymentId: UUID, transition: CheckedTransition, errorCode: String?, detail: String?) {
            (self.paymentId, self.checked, self.errorCode, self.detail) = (paymentId, transition, errorCode, detail)
        }
    }

    /// ``PaymentStore/transition(_:from:to:actor:errorCode:detail:on:)`` for a batch, in one statement: each payment
    /// still in its transition's `from` status moves, with its audit event (in batch order); returns the ids that moved.
    /// A payment found in another status is left as it is (a redelivery or a race), as the one-payment form leaves it.
    @discardableResult
    public func transitionBatch(_ rows: [Transitioning], actor: String, on connection: PostgresConnection) throws -> Set<UUID> {
        guard !rows.isEmpty else { return [] }
        let updated = try connection.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
                    WITH ORDINALITY AS t(id, from_status, to_status, stage, error_code, detail, n)),
            updated AS (
                UPDATE payments p SET status = i.to_status, stage = i.stage, updated_at = clock_timestamp(),
                       error_code = COALESCE(i.error_code, p.error_code),
                       error_message = COALESCE(CASE WHEN i.error_code IS NULL THEN NULL ELSE i.detail END, p.error_message)
                FROM input i WHERE p.id = i.id AND p.status = i.from_status
                RETURNING p.id, i.n, i.from_status, i.to_status, i.stage, i.error_code, i.detail),
            events AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor, error_code, detail)
                SELECT id, from_status, to_status, stage, $7, error_code, detail FROM updated ORDER BY n)
            SELECT id FROM updated
            """,
            [PostgresArray(rows.map(\.paymentId)), PostgresArray(rows.map { $0.checked.from?.rawValue }),
             PostgresArray(rows.map(\.checked.to.rawValue)), PostgresArray(rows.map(\.checked.stage.rawValue)),
             PostgresArray(rows.map(\.errorCode)), PostgresArray(rows.map(\.detail)), actor])
        return Set(try updated.map { try $0.decode("id", as: UUID.self) })
    }

    /// Claims up to `limit` payments idle at `stage` (and not re-driven) for `seconds`, oldest first, skipping rows
    /// another worker holds, stamps `redriven_at` and counts the re-drive; returns their hand-offs, in the payments' traces.
    public func claimStuck(in stage: PaymentStage, idleFor seconds: Double, limit: Int, on transaction: PostgresConnection) throws -> [StageMessage] {
        let rows = try transaction.query(
            """
            WITH stuck AS (
                SELECT id FROM payments
                WHERE stage = $1
                  AND updated_at < now() - make_interval(secs => $2)
                  AND (redriven_at IS NULL OR redriven_at < now() - make_interval(secs => $2))
                ORDER BY updated_at
                LIMIT $3
                FOR UPDATE SKIP LOCKED)
            UPDATE payments p SET redriven_at = now(), redrive_count = p.redrive_count + 1
            FROM stuck WHERE p.id = stuck.id
            RETURNING p.id, p.merchant_id, p.job_id, p.trace_parent, p.trace_state
            """,
            [stage.rawValue, seconds, limit])
        return try rows.map(Self.tracedMessage(row:))
    }

    package static func message(row: PostgresRow) throws -> StageMessage {
        StageMessage(paymentId: try row.decode("id", as: UUID.self), merchantId: try row.decode("merchant_id", as: String.self),
                     jobId: try row.decode("job_id", as: String.self))
    }

    /// The hand-off of payment `id` in its own trace, for one re-driven by an operator (`paypipe payment resolve`); nil
    /// when there is no such payment.
    public func tracedMessage(_ id: UUID, on connection: PostgresConnection) throws -> StageMessage? {
        try connection.query("SELECT id, merchant_id, job_id, trace_parent, trace_state FROM payments WHERE id = $1", [id])
            .first.map(Self.tracedMessage(row:))
    }

    /// The hand-off of a row read with its `trace_parent` and `trace_state`, for a re-drive outside any delivery's
    /// handling: it continues the payment's trace (``StageMessage/traceparent``).
    package static func tracedMessage(row: PostgresRow) throws -> StageMessage {
        StageMessage(paymentId: try row.decode("id", as: UUID.self), merchantId: try row.decode("merchant_id", as: String.self),
                     jobId: try row.decode("job_id", as: String.self), traceparent: try row.decode("trace_parent", as: String?.self),
                     tracestate: try row.decode("trace_state", as: String?.self))
    }
}
