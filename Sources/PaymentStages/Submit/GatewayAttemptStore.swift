import Foundation
import Postgres

/// SQL for `gateway_attempts`. Stateless; callers own the transactions. The request type column tells AUTH
/// attempts (`AUTH`, `THREEDQUERY,AUTH`) from the status queries made to reconcile them (`TRANSACTIONQUERY`).
public struct GatewayAttemptStore: Sendable {
    public static let queryRequestType = "TRANSACTIONQUERY"

    public init() {}

    /// Records an attempt in state `sending`; commit this before the call.
    public func begin(paymentId: UUID, orderReference: String, requestType: String, on connection: PostgresConnection) throws -> Int64 {
        let rows = try connection.query(
            """
            INSERT INTO gateway_attempts (payment_id, order_reference, request_type, state, started_at)
            VALUES ($1, $2, $3, 'sending', clock_timestamp()) RETURNING id
            """, [paymentId, orderReference, requestType])
        return try rows[0].decode("id", as: Int64.self)
    }

    /// Records what an attempt came to.
    public func finish(_ id: Int64, state: GatewayAttempt.State, result: GatewayResult, on connection: PostgresConnection) throws {
        try connection.query(
            """
            UPDATE gateway_attempts SET state = $2, outcome = $3, error_code = $4, error_message = $5,
                   transaction_reference = $6, settle_status = $7, acquirer_response_code = $8, auth_code = $9,
                   masked_pan = $10, finished_at = clock_timestamp()
            WHERE id = $1
            """,
            [id, state.rawValue, result.recordedOutcome, result.errorCode, result.recordedErrorMessage,
             result.transactionReference, result.settleStatus, result.acquirerResponseCode, result.authCode, result.maskedPan])
    }

    /// Records one TRANSACTIONQUERY and its verdict (`found`, `not_found`, `inconclusive`) as a completed attempt.
    public func recordQuery(paymentId: UUID, orderReference: String, result: TransactionQueryResult, on connection: PostgresConnection) throws {
        let id = try begin(paymentId: paymentId, orderReference: orderReference, requestType: Self.queryRequestType, on: connection)
        let recorded: GatewayResult
        switch result {
        case .found(let found):
            recorded = found
        case .notFound:
            recorded = GatewayResult(outcome: .transient, errorCode: "0", errorMessage: "no transaction for the order")
        case .inconclusive(let code, let reason):
            recorded = GatewayResult(outcome: .uncertain, errorCode: code, errorMessage: reason)
        }
        try finish(id, state: .completed, result: recorded, on: connection)
        try connection.query("UPDATE gateway_attempts SET outcome = $2 WHERE id = $1", [id, result.verdict])
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
