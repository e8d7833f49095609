import Foundation
import Pipeline
import Postgres

/// SQL for `gateway_attempts`. Stateless; callers own the transactions. The request type column tells AUTH
/// attempts (the connector's request types, comma-joined) from the status queries made to reconcile them
/// (``queryRequestType``).
public struct GatewayAttemptStore: Sendable {
    /// The stored request type of every connector's AUTH status query (``ConnectorRegistry/authStatusQueryRequestType``).
    public static let queryRequestType = ConnectorRegistry.authStatusQueryRequestType

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

    /// What one attempt came to: its new state and the answer written into its row.
    public struct Finish: Sendable {
        public let attemptId: Int64
        public let state: GatewayAttempt.State
        public let result: GatewayResult

        public init(_ attemptId: Int64, state: GatewayAttempt.State, result: GatewayResult) {
            (self.attemptId, self.state, self.result) = (attemptId, state, result)
        }
    }

    /// Records what an attempt came to. `open`: the attempt must still be `sending` or `uncertain` (the settling of a
    /// current attempt, read so under the payment's row lock); anything else is ``NotCurrent``.
    public func finish(_ id: Int64, state: GatewayAttempt.State, result: GatewayResult, open: Bool = false, on connection: PostgresConnection) throws {
        try finish([Finish(id, state: state, result: result)], open: open, on: connection)
    }

    /// Records what each attempt of a batch came to, in one statement. `open`: every attempt must still be `sending`
    /// or `uncertain` (read so under the payments' row locks); if one is not, ``NotCurrent`` (the transaction rolls back).
    public func finish(_ rows: [Finish], open: Bool = false, on connection: PostgresConnection) throws {
        guard !rows.isEmpty else { return }
        let results = rows.map(\.result)
        let updated = try connection.query(
            """
            UPDATE gateway_attempts a SET state = i.state, outcome = i.outcome, error_code = i.error_code, error_message = i.error_message,
                   transaction_reference = i.transaction_reference, settle_status = i.settle_status,
                   acquirer_response_code = i.acquirer_response_code, auth_code = i.auth_code, masked_pan = i.masked_pan,
                   settle_due_date = i.settle_due_date::date, finished_at = clock_timestamp()
            FROM unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                        $10::text[], $12::text[])
                 AS i(id, state, outcome, error_code, error_message, transaction_reference, settle_status, acquirer_response_code,
                      auth_code, masked_pan, settle_due_date)
            WHERE a.id = i.id AND (NOT $11 OR a.state IN ('sending', 'uncertain'))
            RETURNING a.id
            """,
            [PostgresArray(rows.map(\.attemptId)), PostgresArray(rows.map(\.state.rawValue)), PostgresArray(results.map(\.recordedOutcome)),
             PostgresArray(results.map(\.errorCode)), PostgresArray(results.map(\.recordedErrorMessage)),
             PostgresArray(results.map(\.transactionReference)), PostgresArray(results.map(\.settleStatus)),
             PostgresArray(results.map(\.acquirerResponseCode)), PostgresArray(results.map(\.authCode)), PostgresArray(results.map(\.maskedPan)),
             open, PostgresArray(results.map(\.settleDueDate))])
        let finished = Set(try updated.map { try $0.decode("id", as: Int64.self) })
        if let missed = rows.first(where: { !finished.contains($0.attemptId) }) { throw NotCurrent(attemptId: missed.attemptId) }
    }

    /// Keeps an answer that came for an attempt that was no longer current, without touching its state or outcome.
    public func recordEvidence(_ id: Int64, result: GatewayResult, on connection: PostgresConnection) throws {
        try recordEvidence([(id, result)], on: connection)
    }

    /// ``recordEvidence(_:result:on:)`` for a batch, in one statement.
    public func recordEvidence(_ rows: [(attemptId: Int64, result: GatewayResult)], on connection: PostgresConnection) throws {
        guard !rows.isEmpty else { return }
        let results = rows.map(\.result)
        try connection.query(
            """
            UPDATE gateway_attempts a SET late_outcome = i.outcome, late_error_code = i.error_code,
                   late_transaction_reference = i.transaction_reference, late_settle_status = i.settle_status,
                   late_answered_at = clock_timestamp()
            FROM unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[]) AS i(id, outcome, error_code, transaction_reference, settle_status)
            WHERE a.id = i.id
            """,
            [PostgresArray(rows.map(\.attemptId)), PostgresArray(results.map(\.recordedOutcome)), PostgresArray(results.map(\.errorCode)),
             PostgresArray(results.map(\.transactionReference)), PostgresArray(results.map(\.settleStatus))])
    }

    /// One status query to record: the payment and order it asked about, its answer, and whether it was asked for
    /// the payment's current attempt.
    public struct Query: Sendable {
        public let paymentId: UUID
        public let orderReference: String
        public let result: TransactionQueryResult
        public let current: Bool

        public init(paymentId: UUID, orderReference: String, result: TransactionQueryResult, current: Bool = true) {
            (self.paymentId, self.orderReference, self.result, self.current) = (paymentId, orderReference, result, current)
        }
    }

    /// Records one status query and its verdict (`found`, `not_found`, `inconclusive`) as a completed attempt.
    /// A query answered for an attempt that is no longer current is kept as `stale_<verdict>`, so that it never
    /// counts towards the confirmations or the query budget of a newer attempt. One statement: the query is
    /// recorded after its answer, so its row is written complete.
    public func recordQuery(
        paymentId: UUID, orderReference: String, result: TransactionQueryResult, current: Bool = true, on connection: PostgresConnection
    ) throws {
        try recordQueries([Query(paymentId: paymentId, orderReference: orderReference, result: result, current: current)], on: connection)
    }

    /// ``recordQuery(paymentId:orderReference:result:current:on:)`` for a batch, in one statement; the rows are
    /// inserted in batch order (their ids ascend as one call each would assign them).
    public func recordQueries(_ queries: [Query], on connection: PostgresConnection) throws {
        guard !queries.isEmpty else { return }
        let recorded = queries.map { query -> GatewayResult in
            switch query.result {
            case .found(let found): found
            case .notFound: GatewayResult(outcome: .transient, errorCode: "0", errorMessage: "no transaction for the order")
            case .inconclusive(let code, let reason): GatewayResult(outcome: .uncertain, errorCode: code, errorMessage: reason)
            }
        }
        try connection.query(
            """
            INSERT INTO gateway_attempts (payment_id, order_reference, request_type, state, started_at, finished_at, outcome,
                                          error_code, error_message, transaction_reference, settle_status, acquirer_response_code,
                                          auth_code, masked_pan)
            SELECT payment_id, order_reference, $3, 'completed', clock_timestamp(), clock_timestamp(), outcome, error_code, error_message,
                   transaction_reference, settle_status, acquirer_response_code, auth_code, masked_pan
            FROM unnest($1::uuid[], $2::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
                        $11::text[])
                 WITH ORDINALITY AS i(payment_id, order_reference, outcome, error_code, error_message, transaction_reference,
                                      settle_status, acquirer_response_code, auth_code, masked_pan, n)
            ORDER BY n
            """,
            [PostgresArray(queries.map(\.paymentId)), PostgresArray(queries.map(\.orderReference)), Self.queryRequestType,
             PostgresArray(queries.map { $0.current ? $0.result.verdict : "stale_\($0.result.verdict)" }),
             PostgresArray(recorded.map(\.errorCode)), PostgresArray(recorded.map(\.recordedErrorMessage)),
             PostgresArray(recorded.map(\.transactionReference)), PostgresArray(recorded.map(\.settleStatus)),
             PostgresArray(recorded.map(\.acquirerResponseCode)), PostgresArray(recorded.map(\.authCode)),
             PostgresArray(recorded.map(\.maskedPan))])
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

/// A row of `gateway_attempts`: one request sent (or about to be sent) to the gateway.
public struct GatewayAttempt: Sendable, Equatable {
    public typealias State = GatewayAttemptState

    public let id: Int64
    public let orderReference: String
    public let requestType: String
    public let state: State
    public let outcome: String?
    public let errorCode: String?
    public let startedAt: Date
    /// After this the attempt's request bytes never leave (nil: written before the send window existed).
    public let sendDeadline: Date?
    /// When the attempt may be queried, on the database clock (nil: written before migration 5).
    public let reconcileAfter: Date?
    /// The site the AUTH went to (nil: written before migration 5; the merchant's current site is then used).
    public let siteReference: String?
    /// The outcome of an answer that came when the attempt was no longer current (kept as evidence).
    public let lateOutcome: String?

    static let columns = "id, order_reference, request_type, state, outcome, error_code, started_at, send_deadline, reconcile_after, site_reference, late_outcome"

    init(row: PostgresRow) throws {
        id = try row.decode("id", as: Int64.self)
        orderReference = try row.decode("order_reference", as: String.self)
        requestType = try row.decode("request_type", as: String.self)
        state = try row.decodeChoice("state", as: State.self)
        outcome = try row.decode("outcome", as: String?.self)
        errorCode = try row.decode("error_code", as: String?.self)
        startedAt = try row.decode("started_at", as: Date.self)
        sendDeadline = try row.decode("send_deadline", as: Date?.self)
        reconcileAfter = try row.decode("reconcile_after", as: Date?.self)
        siteReference = try row.decode("site_reference", as: String?.self)
        lateOutcome = try row.decode("late_outcome", as: String?.self)
    }
}

/// The `orderreference` PayPipe sends to the gateway, and each AUTH attempt's `order_reference` here: unique per
/// payment, so that a status query by it can only find this payment's AUTH. The merchant's `orderReference` is not unique (a retried order is a new job with the
/// same reference, as the job contract's own example shows); it stays unchanged in PayPipe's events and webhooks.
///
/// Form: `<merchant reference>.<first 12 hex digits of the payment id>`, so it still reads as the merchant's order
/// in the gateway's back office. The strictest connector gives the field 25 characters and may truncate a longer
/// value (docs/submit.md cites the field specification). Truncation would cut the payment-id suffix first and make retries of one order share a reference
/// again, so the whole reference stays within ``maximumLength``: when the merchant's reference is too long for the
/// combined form, the payment id alone is sent, as its first 25 hex digits (100 bits).
public enum GatewayOrderReference {
    public static let maximumLength = 25
    static let suffixLength = 12

    public static func forPayment(merchantReference: String, paymentId: UUID) -> String {
        let hex = paymentId.paymentIDHex
        let combined = "\(merchantReference).\(hex.prefix(suffixLength))"
        return !merchantReference.isEmpty && combined.utf8.count <= maximumLength ? combined : String(hex.prefix(maximumLength))
    }
}
