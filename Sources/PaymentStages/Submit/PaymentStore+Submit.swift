import Foundation
import PaymentDomain
import Pipeline
import Postgres

// The submit stage's statements, in the order its transactions run them: the batch read and the sends of the
// planning transaction (`SubmitPlanStatement`), the endings of the recording transaction (`SubmitRecordStatement`),
// and the set-based SQL both call, submit's part of `PaymentStore` (one writer of `payments` and `payment_events`).

/// The submit stage's batch read and the set-based statement of its planning transaction.
///
/// The read is the one both transactions start with (prepare and record): every payment of the batch locked in id
/// order (two workers cannot deadlock on the same payments), with its stored request, its latest AUTH attempt and
/// the status queries since, and the database's time read once for the batch. ``SubmitDecision`` decides on it.
/// The `sending` attempt and `prepared → submitting` are written in the planning transaction, which commits before
/// any AUTH leaves.
enum SubmitPlanStatement {
    /// A payment as submit reads it: its status and deadline for the decisions, its merchant for the endpoint, its
    /// amount and capture mode for the request and the status query, its hand-off.
    struct Payment: Sendable {
        let id: UUID
        let merchantId: String
        let jobId: String
        let status: PaymentStatus
        let firstReceivedAt: Date
        let amountMinor: Int64?
        let currency: String?
        /// How its AUTH is captured (migration 7; `automatic` before it).
        let captureMode: CaptureMode

        /// The hand-off message that addresses this payment.
        var message: StageMessage { StageMessage(paymentId: id, merchantId: merchantId, jobId: jobId) }

        /// The columns ``init(row:)`` reads, of the `payments` alias `p` (the joined request has an `order_reference`).
        static let columns = "p.id, p.merchant_id, p.job_id, p.status, p.first_received_at, p.amount_minor, p.currency, p.capture_mode"

        init(row: PostgresRow) throws {
            id = try row.decode("id", as: UUID.self)
            merchantId = try row.decode("merchant_id", as: String.self)
            jobId = try row.decode("job_id", as: String.self)
            status = try row.decodeChoice("status")
            firstReceivedAt = try row.decode("first_received_at", as: Date.self)
            amountMinor = try row.decode("amount_minor", as: Int64?.self)
            currency = try row.decode("currency", as: String?.self)
            captureMode = CaptureMode(rawValue: try row.decode("capture_mode", as: String.self)) ?? .automatic
        }
    }

    /// A payment of the batch, locked, as the decisions see it plus what carrying them out needs.
    struct Row {
        let payment: Payment
        /// Its stored request when it is `prepared` (`nil`: none stored, already purged, or unreadable).
        let request: GatewayRequest?
        let locked: SubmitDecision.Locked
        /// The latest AUTH attempt's order reference and site (what a status query asks about, and where).
        let orderReference: String?
        let siteReference: String?
    }

    /// The batch read: the rows by payment id (ids without a payment are absent) and the database's time.
    struct Read {
        let now: Date
        let rows: [UUID: Row]

        var locked: [UUID: SubmitDecision.Locked] { rows.mapValues(\.locked) }
    }

    /// One AUTH about to be sent: its `sending` attempt.
    typealias Send = PaymentStore.SubmitSend

    /// Locks the batch's payments, then reads them. `legacySettleSeconds` stands in for the reconciliation
    /// time of an attempt written before migration 5 (`started_at` + it).
    static func lockAndRead(_ ids: [UUID], legacySettleSeconds: Double, requests: GatewayRequestStore, on connection: PostgresConnection) throws -> Read {
        // Two statements, never one: a statement that waits for a row lock returns the locked row as its holder left
        // it, but reads every other table (attempts, status queries, requests) as of its own start, before the
        // holder committed. Read after the locks are held, the attempts are the ones the payment's status belongs to.
        try connection.query(lockOnlyStatement, [PostgresArray(ids)])
        return try read(ids, legacySettleSeconds: legacySettleSeconds, requests: requests, on: connection)
    }

    /// The batch read of payments whose row locks this transaction already holds (e.g. claimed by the reconciler).
    static func read(_ ids: [UUID], legacySettleSeconds: Double, requests: GatewayRequestStore, on connection: PostgresConnection) throws -> Read {
        var rows: [UUID: Row] = [:]
        var now: Date?
        for row in try connection.query(readStatement, [PostgresArray(ids), legacySettleSeconds, GatewayAttemptStore.queryRequestType]) {
            now = try row.decode("db_now", as: Date.self)
            let payment = try Payment(row: row)
            let request = payment.status == .prepared ? (try? requests.open(row, for: payment.id)) ?? nil : nil
            var latest: SubmitProtocol.Attempt?
            if let id = try row.decode("attempt_id", as: Int64?.self) {
                let state = try row.decodeChoice("attempt_state", as: GatewayAttempt.State.self)
                latest = SubmitProtocol.Attempt(id: id, state: state, reconcileAfter: try row.decode("settle_at", as: Date.self))
            }
            rows[payment.id] = Row(
                payment: payment, request: request,
                locked: SubmitDecision.Locked(
                    status: payment.status, firstReceivedAt: payment.firstReceivedAt, latest: latest,
                    inconclusiveQueries: Int(try row.decode("inconclusive", as: Int64.self)),
                    notFoundQueries: Int(try row.decode("not_found", as: Int64.self)),
                    lastNotFound: try row.decode("last_not_found", as: Date?.self),
                    // A `prepared` payment needs its request; past it, nothing more is sent from it.
                    requestStored: payment.status != .prepared || request != nil),
                orderReference: try row.decode("attempt_reference", as: String?.self),
                siteReference: try row.decode("attempt_site", as: String?.self))
        }
        // No row (every payment unknown): no decision reads the time.
        return Read(now: now ?? .distantPast, rows: rows)
    }

    /// One payment, locked and read (a permanent failure recorded alone); `nil` when it does not exist.
    static func lockPayment(_ id: UUID, on connection: PostgresConnection) throws -> Payment? {
        try connection.query("SELECT \(Payment.columns) FROM payments p WHERE p.id = $1 FOR UPDATE", [id]).first.map(Payment.init(row:))
    }

    /// Moves every payment of `sends` from `prepared` to `submitting` with its `sending` attempt and audit event
    /// (``PaymentStore/beginSubmitting(_:sendWindow:actor:on:)``); returns the attempt id of each payment it moved.
    static func begin(_ sends: [Send], sendWindow: Double, on connection: PostgresConnection) throws -> [UUID: Int64] {
        guard !sends.isEmpty else { return [:] }
        return try PaymentStore().beginSubmitting(sends, sendWindow: sendWindow, actor: SubmitStage.actor, on: connection)
    }

    /// The batch's row locks, in id order (two workers cannot deadlock on the same payments).
    private static let lockOnlyStatement = "SELECT id FROM payments WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE"

    /// The batch read, under the locks taken before it. `db_now` is an uncorrelated subquery: evaluated once per
    /// execution, the batch's one reading of the clock.
    private static let readStatement = """
        SELECT \(Payment.columns), \(GatewayRequestStore.columns("g")), (SELECT clock_timestamp()) AS db_now,
               a.id AS attempt_id, a.state AS attempt_state, a.order_reference AS attempt_reference, a.site_reference AS attempt_site,
               coalesce(a.reconcile_after, a.started_at + make_interval(secs => $2::float8)) AS settle_at,
               coalesce(q.inconclusive, 0) AS inconclusive, coalesce(q.not_found, 0) AS not_found, q.last_not_found
        FROM payments p
        LEFT JOIN gateway_requests g ON g.payment_id = p.id AND g.purged_at IS NULL AND g.ciphertext IS NOT NULL
        LEFT JOIN LATERAL (SELECT id, state, order_reference, site_reference, reconcile_after, started_at FROM gateway_attempts
                           WHERE payment_id = p.id AND request_type <> $3 ORDER BY id DESC LIMIT 1) a ON true
        LEFT JOIN LATERAL (SELECT count(*) FILTER (WHERE outcome = 'inconclusive' AND error_code IS DISTINCT FROM 'merchant_busy')::bigint AS inconclusive,
                                  count(*) FILTER (WHERE outcome = 'not_found')::bigint AS not_found,
                                  max(started_at) FILTER (WHERE outcome = 'not_found') AS last_not_found
                           FROM gateway_attempts WHERE payment_id = p.id AND request_type = $3 AND id > a.id) q ON true
        WHERE p.id = ANY($1::uuid[])
        """
}

/// The set-based SQL of the submit stage's recording transaction for answers that end the payment: one statement
/// for the batch instead of four per message (lock, attempt, transition, purge).
///
/// No explicit purge: the `payments_terminal_purge` trigger shreds card data and the stored request in the same
/// statement that makes the payment terminal.
enum SubmitRecordStatement {
    /// One final answer to record, with what it means for the payment.
    struct Ending {
        let paymentId: UUID
        let attemptId: Int64
        let result: GatewayResult
        let decision: TerminalDecision
    }

    /// Ends every payment of `endings` still `submitting` whose attempt is its current one (latest AUTH attempt, still
    /// `sending` or `uncertain`: the protocol's guard, in SQL; guarded, locked in id order), completes its attempt with
    /// the columns ``GatewayAttemptStore/finish(_:state:result:on:)`` writes, and records the audit events; returns,
    /// per ending, the hand-off of the payment if it was ended (`nil`: not `submitting`, left to the caller).
    static func finish(_ endings: [Ending], on connection: PostgresConnection) throws -> [StageMessage?] {
        let transitions = try CheckedTransition.checkEach(endings.map { (from: PaymentStatus.submitting, to: $0.decision.status) })
        let ended = try PaymentStore().endSubmitting(
            zip(endings, transitions).map { ending, transition in
                let result = ending.result
                return PaymentStore.SubmitEnding(
                    paymentId: ending.paymentId, attemptId: ending.attemptId, transition: transition,
                    errorCode: ending.decision.errorCode, detail: ending.decision.detail,
                    answer: PaymentStore.AttemptAnswer(
                        outcome: result.recordedOutcome, errorCode: result.errorCode, errorMessage: result.recordedErrorMessage,
                        transactionReference: result.transactionReference, settleStatus: result.settleStatus,
                        acquirerResponseCode: result.acquirerResponseCode, authCode: result.authCode, maskedPan: result.maskedPan,
                        settleDueDate: result.settleDueDate))
            },
            attemptState: GatewayAttempt.State.completed.rawValue, actor: SubmitStage.actor, on: connection)
        // Every payment ended must have had its current attempt completed in the same statement.
        guard ended.allAttemptsCompleted else { throw GatewayAttemptStore.NotCurrent(attemptId: endings[0].attemptId) }
        return ended.messages
    }
}

/// The submit stage's part of ``Pipeline/PaymentStore``'s set-based statements, kept with the stage that runs them
/// (`prepared → submitting` with the `sending` attempts; the endings with their answers). `PaymentStore` stays the one
/// writer of `payments` and `payment_events`; ``SubmitPlanStatement`` and ``SubmitRecordStatement`` call these.
extension PaymentStore {
    /// One AUTH about to be sent: its `sending` attempt, with the columns `GatewayAttemptStore.begin` writes.
    public struct SubmitSend: Sendable {
        public let paymentId: UUID
        public let orderReference: String
        public let requestType: String
        public let siteReference: String
        /// Seconds from the send deadline to reconciliation: the transport's total timeout plus the margin.
        public let settleSeconds: Double

        public init(paymentId: UUID, orderReference: String, requestType: String, siteReference: String, settleSeconds: Double) {
            (self.paymentId, self.orderReference, self.requestType, self.siteReference, self.settleSeconds) =
                (paymentId, orderReference, requestType, siteReference, settleSeconds)
        }
    }

    /// Moves every payment of `sends` from `prepared` to `submitting` (guarded by status), records their `sending`
    /// attempts and audit events, in one statement; returns the attempt id of each payment it moved. The attempts are
    /// inserted only for payments the guarded update moved, in batch order (ids ascending as the
    /// per-message path would assign them), with `clock_timestamp()` as `started_at` and the same send deadline and
    /// reconciliation time as `GatewayAttemptStore.begin`.
    public func beginSubmitting(_ sends: [SubmitSend], sendWindow: Double, actor: String, on connection: PostgresConnection) throws -> [UUID: Int64] {
        let submitting = try CheckedTransition(from: .prepared, to: .submitting)
        let rows = try connection.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $8::text[], $10::float8[]) WITH ORDINALITY AS t(payment_id, order_reference, request_type, site_reference, settle_seconds, n)),
            moved AS (
                UPDATE payments p SET status = $5, stage = $6, updated_at = clock_timestamp()
                FROM input i
                WHERE p.id = i.payment_id AND p.status = $4
                RETURNING p.id, i.n, i.order_reference, i.request_type, i.site_reference, i.settle_seconds),
            attempts AS (
                INSERT INTO gateway_attempts (payment_id, order_reference, request_type, state, started_at, send_deadline, reconcile_after, site_reference)
                SELECT id, order_reference, request_type, 'sending', t, t + make_interval(secs => $9::float8), t + make_interval(secs => $9::float8 + settle_seconds), site_reference
                FROM (SELECT *, clock_timestamp() AS t FROM moved) m ORDER BY n
                RETURNING id, payment_id),
            events AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor)
                SELECT id, $4, $5, $6, $7 FROM moved ORDER BY n)
            SELECT id, payment_id FROM attempts
            """, [
            PostgresArray(sends.map(\.paymentId)), PostgresArray(sends.map(\.orderReference)), PostgresArray(sends.map(\.requestType)),
            submitting.from?.rawValue, submitting.to.rawValue, submitting.stage.rawValue, actor,
            PostgresArray(sends.map(\.siteReference)), sendWindow, PostgresArray(sends.map(\.settleSeconds)),
        ])
        var attempts: [UUID: Int64] = [:]
        for row in rows {
            attempts[try row.decode("payment_id", as: UUID.self)] = try row.decode("id", as: Int64.self)
        }
        return attempts
    }

    /// What a gateway answer writes into its attempt row (the columns `GatewayAttemptStore.finish` writes).
    public struct AttemptAnswer: Sendable {
        public let outcome: String
        public let errorCode, errorMessage, transactionReference, settleStatus, acquirerResponseCode, authCode, maskedPan: String?
        /// The AUTH's settlement due date as its processor answered it (`YYYY-MM-DD`, ``SettlementSchedule``), validated
        /// by the caller.
        public let settleDueDate: String?

        public init(outcome: String, errorCode: String?, errorMessage: String?, transactionReference: String?, settleStatus: String?,
                    acquirerResponseCode: String?, authCode: String?, maskedPan: String?, settleDueDate: String? = nil) {
            self.settleDueDate = settleDueDate
            (self.outcome, self.errorCode, self.errorMessage, self.transactionReference) = (outcome, errorCode, errorMessage, transactionReference)
            (self.settleStatus, self.acquirerResponseCode, self.authCode, self.maskedPan) = (settleStatus, acquirerResponseCode, authCode, maskedPan)
        }
    }

    /// A final answer that ends a `submitting` payment: its checked transition and the answer for its attempt.
    public struct SubmitEnding: Sendable {
        public let paymentId: UUID
        public let attemptId: Int64
        public let checked: CheckedTransition
        public let errorCode: String?
        public let detail: String?
        public let answer: AttemptAnswer

        public init(paymentId: UUID, attemptId: Int64, transition: CheckedTransition, errorCode: String?, detail: String?, answer: AttemptAnswer) {
            (self.paymentId, self.attemptId, self.checked, self.errorCode, self.detail, self.answer) =
                (paymentId, attemptId, transition, errorCode, detail, answer)
        }
    }

    /// Ends every payment of `endings` still in its transition's `from` status whose attempt is its current one
    /// (latest AUTH attempt, still `sending` or `uncertain`; locked in id order), completes that attempt (state
    /// `attemptState`) and records the audit events. Returns, per ending, the hand-off of the payment if it was ended,
    /// and whether every ended payment had its attempt completed. All transitions must leave the same status.
    /// `error_message` only changes when there is an error code, as in ``transition(_:from:to:actor:errorCode:detail:on:)``;
    /// the attempt is completed only for payments the guarded update ended.
    public func endSubmitting(
        _ endings: [SubmitEnding], attemptState: String, actor: String, on connection: PostgresConnection
    ) throws -> (messages: [StageMessage?], allAttemptsCompleted: Bool) {
        guard let from = endings.first?.checked.from else { return ([], true) }
        precondition(endings.allSatisfy { $0.checked.from == from }, "one source status per statement")
        let answers = endings.map(\.answer)
        let rows = try connection.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::int8[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                                     $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $18::text[])
                    WITH ORDINALITY AS t(payment_id, attempt_id, to_status, to_stage, error_code, detail, outcome, attempt_error_code,
                                         attempt_error_message, transaction_reference, settle_status, acquirer_response_code, auth_code,
                                         masked_pan, settle_due_date, n)),
            locked AS MATERIALIZED (
                SELECT p.id FROM payments p WHERE p.id = ANY($1::uuid[]) ORDER BY p.id FOR UPDATE),
            ended AS (
                UPDATE payments p SET status = i.to_status, stage = i.to_stage, updated_at = clock_timestamp(),
                       error_code = COALESCE(i.error_code, p.error_code),
                       error_message = COALESCE(CASE WHEN i.error_code IS NULL THEN NULL ELSE i.detail END, p.error_message)
                FROM input i JOIN locked l ON l.id = i.payment_id
                WHERE p.id = i.payment_id AND p.status = $15
                  AND EXISTS (
                      SELECT 1 FROM gateway_attempts a
                      WHERE a.id = i.attempt_id AND a.payment_id = i.payment_id AND a.state IN ('sending', 'uncertain')
                        AND NOT EXISTS (SELECT 1 FROM gateway_attempts b
                                        WHERE b.payment_id = a.payment_id AND b.id > a.id AND b.request_type <> $19))
                RETURNING p.id, p.merchant_id, p.job_id, i.n, i.to_status, i.to_stage, i.error_code, i.detail),
            attempts AS (
                UPDATE gateway_attempts a SET state = $16, outcome = i.outcome, error_code = i.attempt_error_code,
                       error_message = i.attempt_error_message, transaction_reference = i.transaction_reference,
                       settle_status = i.settle_status, acquirer_response_code = i.acquirer_response_code, auth_code = i.auth_code,
                       masked_pan = i.masked_pan, settle_due_date = i.settle_due_date::date, finished_at = clock_timestamp()
                FROM input i JOIN ended e ON e.id = i.payment_id
                WHERE a.id = i.attempt_id AND a.state IN ('sending', 'uncertain')
                RETURNING a.id),
            events AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor, error_code, detail)
                SELECT id, $15, to_status, to_stage, $17, error_code, detail FROM ended ORDER BY n)
            SELECT id, merchant_id, job_id, n, (SELECT count(*) FROM attempts)::bigint AS settled FROM ended
            """,
            [
                PostgresArray(endings.map(\.paymentId)), PostgresArray(endings.map(\.attemptId)),
                PostgresArray(endings.map(\.checked.to.rawValue)), PostgresArray(endings.map(\.checked.stage.rawValue)),
                PostgresArray(endings.map(\.errorCode)), PostgresArray(endings.map(\.detail)),
                PostgresArray(answers.map(\.outcome)), PostgresArray(answers.map(\.errorCode)),
                PostgresArray(answers.map(\.errorMessage)), PostgresArray(answers.map(\.transactionReference)),
                PostgresArray(answers.map(\.settleStatus)), PostgresArray(answers.map(\.acquirerResponseCode)),
                PostgresArray(answers.map(\.authCode)), PostgresArray(answers.map(\.maskedPan)),
                from.rawValue, attemptState, actor, PostgresArray(answers.map(\.settleDueDate)),
                GatewayAttemptStore.queryRequestType,
            ])
        var ended = [StageMessage?](repeating: nil, count: endings.count)
        let completed = try rows.first.map { try $0.decode("settled", as: Int64.self) == Int64(rows.count) } ?? true
        for row in rows {
            ended[Int(try row.decode("n", as: Int64.self)) - 1] = try Self.message(row: row)
        }
        return (ended, completed)
    }
}
