import Foundation
import JSON
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
        public var appliedNote: String?
    }

    static let columns = "event_id, merchant_id, state, notifications, attempts, received_at, event_type, merchant_token_identifier, last_error, applied_note"

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

    /// A queued event taken for one pull.
    public struct Claim: Sendable, Equatable {
        public var eventId: String
        public var merchantId: String?
        public var receivedAt: Date
        /// Attempts so far, this one included.
        public var attempts: Int
    }

    /// Takes up to `limit` queued events that are due, in one statement: each gets `attempts + 1` and a lease
    /// (`next_attempt_at` moved `lease` seconds on), so a puller that dies mid-call leaves it to the next one after the
    /// lease, and concurrent pullers skip each other's rows (`SKIP LOCKED`). No lock is held during the calls.
    public func claimDue(limit: Int, lease: Double, now: Date, on connection: PostgresConnection) throws -> [Claim] {
        try connection.query(
            """
            UPDATE merchant_token_events SET attempts = attempts + 1, next_attempt_at = $2::timestamptz + make_interval(secs => $3)
            WHERE event_id IN (SELECT event_id FROM merchant_token_events WHERE state = 'queued' AND next_attempt_at <= $2
                               ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
            RETURNING event_id, merchant_id, received_at, attempts
            """, [limit, now, lease]
        ).map { row in
            Claim(eventId: try row.decode("event_id"), merchantId: try row.decode("merchant_id"),
                  receivedAt: try row.decode("received_at"), attempts: try row.decode("attempts"))
        }
    }

    /// Writes the pulls' outcomes in one statement: `pulled` with Apple's fields, `queued` again with the next
    /// attempt time, or `failed`; the reason of a retry or failure in `last_error`.
    /// `merchants`: the merchant a bare-path event resolved to, by event id; it fills only a row without one (a
    /// merchant named by Apple's path is never replaced).
    public func settle(_ outcomes: [(eventId: String, outcome: MerchantTokenEventPull.Outcome)], merchants: [String: String] = [:], now: Date,
                       on connection: PostgresConnection) throws {
        guard !outcomes.isEmpty else { return }
        var ids: [String] = [], states: [String] = [], next: [Date?] = [], types: [String?] = [], identifiers: [String?] = []
        var reasons: [String?] = [], metadata: [String?] = [], errors: [String?] = []
        for (eventId, outcome) in outcomes {
            ids.append(eventId)
            switch outcome {
            case .pulled(let event, _):
                states.append("pulled"); next.append(nil); errors.append(nil)
                types.append(event.type.rawValue); identifiers.append(event.merchantTokenIdentifier); reasons.append(event.reason)
                metadata.append(event.metadata?.serializedString)
            case .retry(let at, let reason):
                states.append("queued"); next.append(at); errors.append(reason)
                types.append(nil); identifiers.append(nil); reasons.append(nil); metadata.append(nil)
            case .failed(let reason):
                states.append("failed"); next.append(nil); errors.append(reason)
                types.append(nil); identifiers.append(nil); reasons.append(nil); metadata.append(nil)
            }
        }
        try connection.query(
            """
            UPDATE merchant_token_events e SET state = o.state, next_attempt_at = coalesce(o.next, e.next_attempt_at),
                merchant_id = coalesce(e.merchant_id, o.merchant),
                event_type = coalesce(o.type, e.event_type),
                merchant_token_identifier = coalesce(o.identifier, e.merchant_token_identifier),
                reason = coalesce(o.reason, e.reason), metadata = coalesce(o.metadata::jsonb, e.metadata), last_error = o.error,
                settled_at = CASE WHEN o.state = 'queued' THEN NULL ELSE $9::timestamptz END
            FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $10::text[])
                AS o(event_id, state, next, type, identifier, reason, metadata, error, merchant)
            WHERE e.event_id = o.event_id AND e.state = 'queued'
            """,
            [PostgresArray(ids), PostgresArray(states), PostgresArray(next), PostgresArray(types), PostgresArray(identifiers),
             PostgresArray(reasons), PostgresArray(metadata), PostgresArray(errors), now, PostgresArray(ids.map { merchants[$0] })])
    }

    /// Pulled events waiting to be applied, locked until the caller's transaction ends (`SKIP LOCKED`: two appliers
    /// never take the same event), oldest first, with Apple's answer as stored.
    public func lockPulled(limit: Int, on transaction: PostgresConnection) throws -> [(eventId: String, merchantId: String?, event: MerchantTokenEvent)] {
        try transaction.query(
            """
            SELECT event_id, merchant_id, event_type, merchant_token_identifier, reason, metadata::text AS metadata
            FROM merchant_token_events WHERE state = 'pulled' ORDER BY received_at LIMIT $1 FOR UPDATE SKIP LOCKED
            """, [limit]
        ).map { row in
            let metadata: String? = try row.decode("metadata")
            let event = MerchantTokenEvent(
                type: .init(try row.decode("event_type")), merchantTokenIdentifier: try row.decode("merchant_token_identifier"),
                reason: try row.decode("reason"), metadata: metadata.flatMap { try? JSONValue.parse($0) })
            return (try row.decode("event_id"), try row.decode("merchant_id"), event)
        }
    }

    /// Marks applied events `applied`, each with what applying it did (`applied_note`).
    public func markApplied(_ notes: [String: String], on transaction: PostgresConnection) throws {
        guard !notes.isEmpty else { return }
        let entries = notes.sorted { $0.key < $1.key }
        try transaction.query(
            """
            UPDATE merchant_token_events e SET state = 'applied', applied_note = n.note, settled_at = clock_timestamp()
            FROM unnest($1::text[], $2::text[]) AS n(event_id, note) WHERE e.event_id = n.event_id AND e.state = 'pulled'
            """, [PostgresArray(entries.map(\.key)), PostgresArray(entries.map(\.value))])
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
            merchantTokenIdentifier: try row.decode("merchant_token_identifier"), lastError: try row.decode("last_error"),
            appliedNote: try row.decode("applied_note"))
    }
}
