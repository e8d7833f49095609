import Foundation
import PaymentDomain
import Postgres

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
        let stateText = try row.decode("state", as: String.self)
        guard let state = State(rawValue: stateText) else {
            throw PostgresError.decoding(column: "state", expected: "GatewayAttempt.State", reason: "unknown state '\(stateText)'")
        }
        self.state = state
        outcome = try row.decode("outcome", as: String?.self)
        errorCode = try row.decode("error_code", as: String?.self)
        startedAt = try row.decode("started_at", as: Date.self)
        sendDeadline = try row.decode("send_deadline", as: Date?.self)
        reconcileAfter = try row.decode("reconcile_after", as: Date?.self)
        siteReference = try row.decode("site_reference", as: String?.self)
        lateOutcome = try row.decode("late_outcome", as: String?.self)
    }
}
