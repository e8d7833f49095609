import Foundation
import Postgres

/// SQL for the `payments` table and its audit trail. Stateless: every method takes the connection
/// (usually inside a transaction) so callers decide transaction boundaries.
///
/// The one writer of `payments` and `payment_events`: this file (one payment at a time) and PaymentStore+SetBased.swift
/// (a batch per statement). Every status a statement writes comes from a ``CheckedTransition``, so it was checked
/// against ``PaymentStateMachine``, and the same change is guarded in SQL with `WHERE status = $expected`.
public struct PaymentStore: Sendable {
    public init() {}

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

    public func load(merchantId: String, jobId: String, on connection: PostgresConnection) throws -> PaymentRecord? {
        let rows = try connection.query(
            "SELECT \(PaymentRecord.columns) FROM payments WHERE merchant_id = $1 AND job_id = $2", [merchantId, jobId])
        return try rows.first.map(PaymentRecord.init(row:))
    }

    /// What a new payment row holds besides its id; everything but the idempotency key is absent for a job that did
    /// not decode (it is created only to record its failure).
    public struct NewPayment: Sendable {
        public let merchantId: String
        public let jobId: String
        public let jobHash: [UInt8]
        public var orderReference: String?
        public var amountMinor: Int64?
        public var currency: String?
        public var notifyURL: String?
        /// A JSON object, for the `jsonb` column.
        public var metadataJSON = "{}"
        /// The job's `captureMode` / `captureWithin` (absent: the merchant's, ``PayPipeSchema`` migration 7).
        public var captureMode: String?
        public var captureWithin: String?

        public init(merchantId: String, jobId: String, jobHash: [UInt8]) {
            (self.merchantId, self.jobId, self.jobHash) = (merchantId, jobId, jobHash)
        }
    }

    /// Creates the payment in the initial status with its first audit event, or returns `nil` if (merchant, job id)
    /// already exists. `first_received_at` is the transaction's time.
    public func create(_ payment: NewPayment, actor: String, on transaction: PostgresConnection) throws -> PaymentRecord? {
        let created = CheckedTransition.creation
        // The payment and its first audit event in one statement (one round trip).
        let inserted = try transaction.query(
            """
            WITH inserted AS (
                INSERT INTO payments (id, merchant_id, job_id, job_hash, order_reference, amount_minor, currency,
                                      status, stage, notify_url, metadata, first_received_at, capture_mode, capture_within_seconds)
                SELECT $1, $2, $3, $4, $5, $6, $7, $10, $11, $8, $9::jsonb, now(), c.capture_mode, c.capture_within_seconds
                FROM paypipe_capture_policy($2, $13, $14) c
                ON CONFLICT (merchant_id, job_id) DO NOTHING
                RETURNING \(PaymentRecord.columns)),
            event AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor)
                SELECT id, NULL, $10::text, $11::text, $12::text FROM inserted)
            SELECT * FROM inserted
            """,
            [UUID(), payment.merchantId, payment.jobId, payment.jobHash, payment.orderReference, payment.amountMinor,
             payment.currency, payment.notifyURL, payment.metadataJSON, created.to.rawValue, created.stage.rawValue, actor,
             payment.captureMode, payment.captureWithin])
        return try inserted.first.map(PaymentRecord.init(row:))
    }

    /// Claims the token `transactionId` for the payment, unless another payment already holds it (a replay): the
    /// check and the claim in one statement, and the unique constraint makes a concurrent replay lose.
    public func claimTransactionId(_ transactionId: String, for paymentId: UUID, on transaction: PostgresConnection) throws -> Bool {
        let claimed = try transaction.query(
            """
            UPDATE payments SET token_transaction_id = $2 WHERE id = $1
              AND NOT EXISTS (SELECT 1 FROM payments WHERE token_transaction_id = $2 AND id <> $1)
            """, [paymentId, transactionId])
        return claimed.affectedRows == 1
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

    /// Marks a terminal payment as fully handled (notification done): it leaves every queue for good.
    /// With `deliveredStatus`, only while the payment still has the status that was delivered: an operator who resolved
    /// a `needs_review` payment while its webhook was in flight has queued the new status, which must still go out.
    public func markDone(_ paymentId: UUID, deliveredStatus: String? = nil, on connection: PostgresConnection) throws {
        try connection.query(
            "UPDATE payments SET stage = $3, updated_at = clock_timestamp() WHERE id = $1 AND stage = $4 AND ($2::text IS NULL OR status = $2)",
            [paymentId, deliveredStatus, PaymentStage.done.rawValue, PaymentStage.notify.rawValue])
    }

    /// Keeps the reconciler away from a `notify` payment until `seconds` from now (its next webhook attempt's time).
    public func holdForRetry(_ paymentId: UUID, seconds: Double, on connection: PostgresConnection) throws {
        try connection.query(
            "UPDATE payments SET redriven_at = clock_timestamp() + make_interval(secs => $2) WHERE id = $1 AND stage = $3",
            [paymentId, seconds, PaymentStage.notify.rawValue])
    }
}
