import Foundation
import Postgres

/// One row of `webhook_deliveries` (for `paypipe webhooks list` and tests).
public struct WebhookDeliveryRecord: Sendable, Equatable {
    public let id: Int64
    public let paymentId: UUID
    public let eventId: String
    public let eventType: String
    public let url: String
    public let attempt: Int
    public let statusCode: Int?
    public let latencyMs: Int?
    public let error: String?
    public let outcome: String
    public let attemptedAt: Date

    static let columns = "id, payment_id, event_id, event_type, url, attempt, status_code, latency_ms, error, outcome, attempted_at"

    init(row: PostgresRow) throws {
        id = try row.decode("id", as: Int64.self)
        paymentId = try row.decode("payment_id", as: UUID.self)
        eventId = try row.decode("event_id", as: String.self)
        eventType = try row.decode("event_type", as: String.self)
        url = try row.decode("url", as: String.self)
        attempt = Int(try row.decode("attempt", as: Int32.self))
        statusCode = try row.decode("status_code", as: Int32?.self).map(Int.init)
        latencyMs = try row.decode("latency_ms", as: Int32?.self).map(Int.init)
        error = try row.decode("error", as: String?.self)
        outcome = try row.decode("outcome", as: String.self)
        attemptedAt = try row.decode("attempted_at", as: Date.self)
    }
}
