import Foundation
import Pipeline
import Postgres

/// SQL for `gateway_attempts`. Stateless; callers own the transactions. The request type column tells AUTH
/// attempts (`AUTH`, `THREEDQUERY,AUTH`) from the status queries made to reconcile them (`TRANSACTIONQUERY`).
public struct GatewayAttemptStore: Sendable {
    public static let queryRequestType = "TRANSACTIONQUERY"

    /// Raised when an attempt that was read as open under the payment's row lock could not be settled: a bug (or a
    /// writer that bypassed the lock), never bad input; the transaction rolls back.
    public struct NotCurrent: Error, CustomStringConvertible {
        public let attemptId: Int64
        public var description: String { "gateway attempt \(attemptId) is no longer open" }
    }

    public init() {}

    /// Records an attempt in state `sending`; commit this before the call. `sendWindow` (seconds from now, on the
    /// database clock) sets its send deadline, and `settleSeconds` (total timeout + margin) after that deadline its
    /// reconciliation time; `siteReference` is the site the request goes to.
    public func begin(
        paymentId: UUID, orderReference: String, requestType: String, siteReference: String? = nil,
        sendWindow: Double? = nil, settleSeconds: Double? = nil, on connection: PostgresConnection
    ) throws -> Int64 {
        let rows = try connection.query(
            """
            WITH now AS (SELECT clock_timestamp() AS t)
            INSERT INTO gateway_attempts (payment_id, order_reference, request_type, state, started_at, send_deadline, reconcile_after, site_reference)
            SELECT $1, $2, $3, 'sending', t, t + make_interval(secs => $4::float8), t + make_interval(secs => $4::float8 + $5::float8), $6::text FROM now
            RETURNING id
            """, [paymentId, orderReference, requestType, sendWindow, settleSeconds.map { $0 }, siteReference])
        return try rows[0].decode("id", as: Int64.self)
    }

    /// Records what an attempt came to. `open`: the attempt must still be `sending` or `uncertain` (the settling of a
    /// current attempt, read so under the payment's row lock); anything else is ``NotCurrent``.
    public func finish(_ id: Int64, state: GatewayAttempt.State, result: GatewayResult, open: Bool = false, on connection: PostgresConnection) throws {
        let rows = try connection.query(
            """
            UPDATE gateway_attempts SET state = $2, outcome = $3, error_code = $4, error_message = $5,
                   transaction_reference = $6, settle_status = $7, acquirer_response_code = $8, auth_code = $9,
                   masked_pan = $10, settle_due_date = $12::text::date, finished_at = clock_timestamp()
            WHERE id = $1 AND (NOT $11 OR state IN ('sending', 'uncertain'))
            """,
            [id, state.rawValue, result.recordedOutcome, result.errorCode, result.recordedErrorMessage,
             result.transactionReference, result.settleStatus, result.acquirerResponseCode, result.authCode, result.maskedPan, open,
             result.settleDueDate])
        guard rows.affectedRows == 1 else { throw NotCurrent(attemptId: id) }
    }

    /// Keeps an answer that came for an attempt that was no longer current, without touching its state or outcome.
    public func recordEvidence(_ id: Int64, result: GatewayResult, on connection: PostgresConnection) throws {
        try connection.query(
            """
            UPDATE gateway_attempts SET late_outcome = $2, late_error_code = $3, late_transaction_reference = $4,
                   late_settle_status = $5, late_answered_at = clock_timestamp()
            WHERE id = $1
            """, [id, result.recordedOutcome, result.errorCode, result.transactionReference, result.settleStatus])
    }

    /// Records one TRANSACTIONQUERY and its verdict (`found`, `not_found`, `inconclusive`) as a completed attempt.
    /// A query answered for an attempt that is no longer current is kept as `stale_<verdict>`, so that it never
    /// counts towards the confirmations or the query budget of a newer attempt. One statement: the query is
    /// recorded after its answer, so its row is written complete.
    public func recordQuery(
        paymentId: UUID, orderReference: String, result: TransactionQueryResult, current: Bool = true, on connection: PostgresConnection
    ) throws {
        let recorded: GatewayResult
        switch result {
        case .found(let found):
            recorded = found
        case .notFound:
            recorded = GatewayResult(outcome: .transient, errorCode: "0", errorMessage: "no transaction for the order")
        case .inconclusive(let code, let reason):
            recorded = GatewayResult(outcome: .uncertain, errorCode: code, errorMessage: reason)
        }
        try connection.query(
            """
            INSERT INTO gateway_attempts (payment_id, order_reference, request_type, state, started_at, finished_at, outcome,
                                          error_code, error_message, transaction_reference, settle_status, acquirer_response_code,
                                          auth_code, masked_pan)
            VALUES ($1, $2, $3, 'completed', clock_timestamp(), clock_timestamp(), $4, $5, $6, $7, $8, $9, $10, $11)
            """,
            [paymentId, orderReference, Self.queryRequestType, current ? result.verdict : "stale_\(result.verdict)", recorded.errorCode,
             recorded.recordedErrorMessage, recorded.transactionReference, recorded.settleStatus, recorded.acquirerResponseCode,
             recorded.authCode, recorded.maskedPan])
    }

    /// The payment's latest AUTH attempt (status queries excluded).
    public func latestAuthorization(paymentId: UUID, on connection: PostgresConnection) throws -> GatewayAttempt? {
        let rows = try connection.query(
            "SELECT \(GatewayAttempt.columns) FROM gateway_attempts WHERE payment_id = $1 AND request_type <> $2 ORDER BY id DESC LIMIT 1",
            [paymentId, Self.queryRequestType])
        return try rows.first.map(GatewayAttempt.init(row:))
    }

    /// How many inconclusive status queries were made since attempt `id`.
    public func inconclusiveQueries(paymentId: UUID, since id: Int64, on connection: PostgresConnection) throws -> Int {
        let rows = try connection.query(
            "SELECT count(*)::bigint AS n FROM gateway_attempts WHERE payment_id = $1 AND id > $2 AND request_type = $3 AND outcome = 'inconclusive'",
            [paymentId, id, Self.queryRequestType])
        return Int(try rows[0].decode("n", as: Int64.self))
    }

    /// Every attempt of a payment, oldest first (for tests and the operator CLI).
    public func attempts(paymentId: UUID, on connection: PostgresConnection) throws -> [GatewayAttempt] {
        try connection.query("SELECT \(GatewayAttempt.columns) FROM gateway_attempts WHERE payment_id = $1 ORDER BY id", [paymentId])
            .map(GatewayAttempt.init(row:))
    }
}

extension TransactionQueryResult {
    /// The value stored in `gateway_attempts.outcome` for a status query.
    var verdict: String {
        switch self {
        case .found: "found"
        case .notFound: "not_found"
        case .inconclusive: "inconclusive"
        }
    }
}
