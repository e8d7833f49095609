import Foundation
import Postgres

/// SQL for `merchant_token_events` (migration 16), its only writer: Apple's merchant-token notifications, queued by
/// the notification endpoint and settled by the puller (docs/merchant-tokens.md).
public struct MerchantTokenEventStore: Sendable {
    public init() {}

    /// One queued notification as listed and pulled.
    public struct Row: Sendable, Equatable {
        public var eventId: String
        public var merchantId: String?
        public var state: String
        public var notifications: Int
        public var attempts: Int
        public var receivedAt: Date
        public var eventType: String?
        public var merchantTokenIdentifier: String?
        public var lastError: String?
    }

    static let columns = "event_id, merchant_id, state, notifications, attempts, received_at, event_type, merchant_token_identifier, last_error"

    /// Queues `notifications` durably in one statement: a new event id gets its row; a repeated one (Apple retries,
    /// or a second notification of the same event) only counts the repeat, so the event is pulled once. Returns the
    /// event ids that were new. Throws when the database cannot take them: the endpoint then answers 500 and Apple
    /// retries.
    @discardableResult
    public func enqueue(_ notifications: [MerchantTokenNotification], on connection: PostgresConnection) throws -> Set<String> {
        guard !notifications.isEmpty else { return [] }
        let rows = try connection.query(
            """
            INSERT INTO merchant_token_events AS e (event_id, merchant_id)
            SELECT DISTINCT ON (event_id) event_id, merchant_id FROM unnest($1::text[], $2::text[]) AS n(event_id, merchant_id)
            ON CONFLICT (event_id) DO UPDATE SET notifications = e.notifications + 1,
                merchant_id = coalesce(e.merchant_id, EXCLUDED.merchant_id)
            RETURNING event_id, (xmax = 0) AS inserted
            """, [PostgresArray(notifications.map(\.eventId)), PostgresArray(notifications.map(\.merchantId))])
        var inserted: Set<String> = []
        for row in rows where try row.decode("inserted", as: Bool.self) {
            inserted.insert(try row.decode("event_id", as: String.self))
        }
        return inserted
    }

    /// Every row, newest first (the CLI's and the tests' view).
    public func list(limit: Int = 100, on connection: PostgresConnection) throws -> [Row] {
        try connection.query(
            "SELECT \(Self.columns) FROM merchant_token_events ORDER BY received_at DESC, event_id LIMIT $1", [limit]
        ).map(Self.row)
    }

    static func row(_ row: PostgresRow) throws -> Row {
        Row(
            eventId: try row.decode("event_id"), merchantId: try row.decode("merchant_id"), state: try row.decode("state"),
            notifications: try row.decode("notifications"), attempts: try row.decode("attempts"),
            receivedAt: try row.decode("received_at"), eventType: try row.decode("event_type"),
            merchantTokenIdentifier: try row.decode("merchant_token_identifier"), lastError: try row.decode("last_error"))
    }
}
