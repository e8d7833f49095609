import Foundation
import Pipeline
import Postgres

/// What one delivery attempt produced, before it is recorded in `webhook_deliveries`.
public struct WebhookAttempt: Sendable, Equatable {
    public var url: String
    /// 1-based: the delivery's retry count + 1.
    public var number: Int
    public var statusCode: Int?
    public var latencyMs: Int?
    /// Short machine-readable reason (`http_503`, `timeout`, `ssrf_refused: …`); never the response body.
    public var error: String?
    /// The response's `Retry-After`, in seconds, when it sent one (the endpoint asked to be left alone that long).
    public var retryAfterSeconds: Double?
    public var outcome: WebhookDeliveryOutcome

    public init(url: String, number: Int, statusCode: Int? = nil, latencyMs: Int? = nil, error: String? = nil, outcome: WebhookDeliveryOutcome) {
        self.url = url
        self.number = number
        self.statusCode = statusCode
        self.latencyMs = latencyMs
        self.error = error
        self.outcome = outcome
    }

    /// The attempt of a 2xx answer as recorded (by either path).
    var asDelivered: WebhookAttempt {
        var attempt = self
        attempt.outcome = .delivered
        return attempt
    }
}

/// `webhook_deliveries.outcome` of one attempt (the column has a CHECK on these values).
public enum WebhookDeliveryOutcome: String, Sendable, CaseIterable {
    /// 2xx: the merchant has the event.
    case delivered
    /// Failed; another attempt is scheduled on the retry tiers.
    case retrying
    /// Failed for good: retries exhausted, refused by the SSRF guard, or no usable secret.
    case failed
    /// 410 Gone: the endpoint was disabled and receives nothing more until re-enabled.
    case disabled
    /// Not sent: the endpoint is disabled for failing too long (`webhook_endpoints`). The payment stays in stage
    /// `notify`, kept away from the reconciler, until `paypipe webhooks endpoints enable` releases it for delivery.
    case held
}

/// SQL for `webhook_deliveries` (one row per attempt) and the webhook switch of a merchant's configuration.
/// Stateless, like ``Pipeline/PaymentStore``; called outside any transaction by the notify stage (each write stands
/// on its own, and no transaction is held across the HTTP call).
public struct WebhookDeliveryStore: Sendable {
    public init() {}

    public func record(_ attempt: WebhookAttempt, event: PaymentEvent, on connection: PostgresConnection) throws {
        try record(attempt, paymentId: event.paymentId, eventId: event.id, eventType: event.type.rawValue, on: connection)
    }

    public func record(_ attempt: WebhookAttempt, event: NotifyEvent, on connection: PostgresConnection) throws {
        try record(attempt, paymentId: event.paymentId, eventId: event.id, eventType: event.type, on: connection)
    }

    /// An attempt of any event of a payment (a payment's result, or one of its operations' events).
    public func record(_ attempt: WebhookAttempt, paymentId: UUID, eventId: String, eventType: String, on connection: PostgresConnection) throws {
        try connection.query(
            """
            INSERT INTO webhook_deliveries (payment_id, event_id, event_type, url, attempt, status_code, latency_ms, error, outcome)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            """,
            [paymentId, eventId, eventType, attempt.url, Int32(clamping: attempt.number),
             attempt.statusCode.map { Int32(clamping: $0) }, attempt.latencyMs.map { Int32(clamping: $0) }, attempt.error,
             attempt.outcome.rawValue])
    }

    /// Attempts, newest first. `failedOnly` keeps attempts whose outcome is `failed` or `disabled`.
    public func list(paymentId: UUID? = nil, failedOnly: Bool = false, limit: Int = 100, on connection: PostgresConnection) throws -> [WebhookDeliveryRecord] {
        let rows = try connection.query(
            """
            SELECT \(WebhookDeliveryRecord.columns) FROM webhook_deliveries
            WHERE ($1::uuid IS NULL OR payment_id = $1::uuid)
              AND (NOT $2::boolean OR outcome IN ('failed', 'disabled'))
            ORDER BY id DESC LIMIT $3
            """,
            [paymentId, failedOnly, Int64(limit)])
        return try rows.map(WebhookDeliveryRecord.init(row:))
    }

    /// Sets `config.webhook.enabled = false` when the merchant's webhook still points at `url` (a 410 from an
    /// old URL must not disable a URL the operator has since configured). Returns whether it changed anything.
    @discardableResult
    public func disableMerchantWebhook(_ merchantId: String, url: String, on connection: PostgresConnection) throws -> Bool {
        let result = try connection.query(
            """
            UPDATE merchants SET config = jsonb_set(config, '{webhook,enabled}', 'false'::jsonb), updated_at = clock_timestamp()
            WHERE id = $1 AND config->'webhook'->>'url' = $2 AND (config->'webhook'->>'enabled')::boolean IS DISTINCT FROM false
            """, [merchantId, url])
        return result.affectedRows == 1
    }

    /// Keeps the reconciler away from a payment whose next webhook attempt is already scheduled on a retry tier:
    /// the reconciler re-drives `notify` payments whose `redriven_at` is older than its threshold, and a webhook
    /// retry may legitimately wait hours. Stamping the expected next attempt time prevents a second delivery chain.
    public func holdForRetry(_ paymentId: UUID, seconds: Double, on connection: PostgresConnection) throws {
        try PaymentStore().holdForRetry(paymentId, seconds: seconds, on: connection)
    }

    /// ``holdForRetry(_:seconds:on:)`` for an event's payment; an operation's or a credential's event is not re-driven.
    func holdForRetry(_ event: NotifyEvent, seconds: Double, on connection: PostgresConnection) throws {
        if case .payment(let paymentId, _) = event.subject { try holdForRetry(paymentId, seconds: seconds, on: connection) }
    }

    /// Holds a payment whose endpoint is disabled: it stays in stage `notify` (not marked done: nothing was
    /// delivered) with `redriven_at = 'infinity'`, which the reconciler never re-drives and its backlog gauges leave
    /// out. ``releaseHeld(_:on:)`` (an operator's `paypipe webhooks endpoints enable`) or `paypipe webhooks replay`
    /// sends it on.
    public func hold(_ paymentIds: [UUID], on connection: PostgresConnection) throws {
        try PaymentStore().holdIndefinitely(paymentIds, on: connection)
    }

    /// Keeps the held events' payments away from the reconciler (``hold(_:on:)``); an operation's or a credential's
    /// event needs nothing more: it stays un-notified.
    func hold(events: [NotifyEvent], on connection: PostgresConnection) throws {
        try hold(events.compactMap { event -> UUID? in
            if case .payment(let id, _) = event.subject { return id }
            return nil
        }, on: connection)
    }

    /// Releases the payments held for `endpoints` (their latest attempt to one of them was `held`) and returns their
    /// hand-offs to publish to `paypipe.notify`. Released payments have `redriven_at` cleared, so if the hand-offs
    /// are never published the reconciler re-drives them after `PAYPIPE_STUCK_AFTER`.
    public func releaseHeld(_ endpoints: [WebhookEndpoint], on connection: PostgresConnection) throws -> [StageMessage] {
        try PaymentStore().releaseHeld(merchantIds: endpoints.map(\.merchantId), urls: endpoints.map(\.url), on: connection)
    }

    /// How many payments each endpoint holds (for `paypipe webhooks endpoints`).
    public func heldCounts(on connection: PostgresConnection) throws -> [WebhookEndpoint: Int] {
        let rows = try connection.query(
            """
            SELECT p.merchant_id, d.url, count(DISTINCT p.id) AS n FROM payments p
            JOIN webhook_deliveries d ON d.payment_id = p.id AND d.outcome = 'held'
            WHERE p.stage = 'notify' AND p.redriven_at = 'infinity'
            GROUP BY p.merchant_id, d.url
            """)
        var counts: [WebhookEndpoint: Int] = [:]
        for row in rows {
            counts[WebhookEndpoint(merchantId: try row.decode("merchant_id", as: String.self), url: try row.decode("url", as: String.self))] =
                Int(try row.decode("n", as: Int64.self))
        }
        return counts
    }
}

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

/// The set-based form of phase 3 of ``NotifyStage`` for its common case, a batch of answered webhooks: one statement
/// (the store's batch `PaymentStore.markDone`) records every attempt in `webhook_deliveries` and marks every payment
/// done, where the per-message path spends two statements per payment (``WebhookDeliveryStore/record(_:event:on:)`` and ``Pipeline/PaymentStore/markDone(_:deliveredStatus:on:)``).
///
/// It writes exactly what those two write (same columns and values; `done` guarded by `stage = 'notify'` and by the
/// status the event delivered), but only
/// for payments whose guarded update matched: a payment no longer at stage `notify` (another worker's duplicate
/// settled it, a replay reset raced) gets nothing here, and the caller hands it to the per-message path, whose
/// semantics (record the attempt anyway, `markDone` a no-op) stay the reference. The rows are locked in id order
/// first, so two lanes settling overlapping batches cannot deadlock.
///
/// The `stage = 'notify'` guard is applied to the locked rows, not to the scan of `payments`: as a scan condition it
/// lets the planner walk the partial index `payments_stage_updated`, whose `notify` entries (dead row versions
/// included, until vacuum) grow with every payment ever notified — in benchmark runs on a fresh, never-analyzed
/// database that plan made notify fall steadily behind (55 million index entries read for 10,000 payments). Locking
/// by id only keeps the statement on the primary key; holding the row locks makes the locked `stage` current.
public struct WebhookDeliveryBatch: Sendable {
    /// One attempt to record for one payment's result.
    public struct Entry: Sendable {
        public let attempt: WebhookAttempt
        public let event: NotifyEvent
        let paymentId: UUID
        let deliveredStatus: String

        public init(attempt: WebhookAttempt, event: PaymentEvent) {
            self.init(attempt: attempt, event: NotifyEvent(event))!
        }

        /// `nil` for an event that is not a payment's result (an operation's is settled one by one).
        public init?(attempt: WebhookAttempt, event: NotifyEvent) {
            guard case .payment(let paymentId, let deliveredStatus) = event.subject else { return nil }
            (self.attempt, self.event, self.paymentId, self.deliveredStatus) = (attempt, event, paymentId, deliveredStatus)
        }
    }

    public init() {}

    /// Records the attempts and marks their payments done; returns the ids of the payments settled (the others had no
    /// row written). The entries' payment ids must be distinct (a payment twice in one statement would be settled
    /// once but recorded twice, unlike the per-message path's order of effects).
    public func settle(_ entries: [Entry], on connection: PostgresConnection) throws -> Set<UUID> {
        guard !entries.isEmpty else { return [] }
        precondition(Set(entries.map(\.paymentId)).count == entries.count, "one entry per payment")
        return try PaymentStore().markDone(entries.map {
            PaymentStore.NotifiedPayment(
                paymentId: $0.paymentId, deliveredStatus: $0.deliveredStatus, eventId: $0.event.id, eventType: $0.event.type,
                url: $0.attempt.url, attempt: Int32(clamping: $0.attempt.number), statusCode: $0.attempt.statusCode.map { Int32(clamping: $0) },
                latencyMs: $0.attempt.latencyMs.map { Int32(clamping: $0) }, error: $0.attempt.error, outcome: $0.attempt.outcome.rawValue)
        }, on: connection)
    }
}
