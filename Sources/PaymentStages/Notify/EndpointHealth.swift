import Foundation
import Postgres

/// A merchant's webhook endpoint as health is tracked: the merchant and the exact URL POSTed to (the merchant's
/// configured webhook or a job's `notify_url`).
public struct WebhookEndpoint: Hashable, Sendable, Comparable {
    public var merchantId: String
    public var url: String

    public init(merchantId: String, url: String) {
        self.merchantId = merchantId
        self.url = url
    }

    public static func < (lhs: WebhookEndpoint, rhs: WebhookEndpoint) -> Bool {
        (lhs.merchantId, lhs.url) < (rhs.merchantId, rhs.url)
    }
}

/// One endpoint's row of `webhook_endpoints`: whether it is failing and since when, and whether it is disabled.
public struct EndpointHealth: Sendable, Equatable {
    /// The first failed attempt after the last success; `nil` while healthy.
    public var failingSince: Date?
    public var lastFailureAt: Date?
    public var lastSuccessAt: Date?
    /// The last failure's `webhook_deliveries.error` (`http_503`, `timeout`, …).
    public var lastError: String?
    public var disabledAt: Date?
    public var disabledReason: String?

    public init(failingSince: Date? = nil, lastFailureAt: Date? = nil, lastSuccessAt: Date? = nil, lastError: String? = nil,
                disabledAt: Date? = nil, disabledReason: String? = nil) {
        self.failingSince = failingSince
        self.lastFailureAt = lastFailureAt
        self.lastSuccessAt = lastSuccessAt
        self.lastError = lastError
        self.disabledAt = disabledAt
        self.disabledReason = disabledReason
    }

    public var isDisabled: Bool { disabledAt != nil }
}

/// What one request to an endpoint told about its health: answered 2xx (`error == nil`) or failed with `error`.
/// Only requests actually sent count; the worker's own refusals (`circuit_open`, `endpoint_busy`, `rate_limited`)
/// say nothing new about the endpoint.
public struct EndpointObservation: Sendable, Equatable {
    public var endpoint: WebhookEndpoint
    public var at: Date
    public var error: String?

    public init(endpoint: WebhookEndpoint, at: Date, error: String?) {
        self.endpoint = endpoint
        self.at = at
        self.error = error
    }
}

/// The disabling rule (Svix's): an endpoint that has failed continuously — no success at all — for `disableAfter`
/// seconds is disabled. Pure: the notify stage reads the states of a batch's endpoints (locked), folds the batch's
/// observations in with ``decide(_:current:)`` and writes the changed rows in one statement.
public struct EndpointHealthPolicy: Sendable, Equatable {
    /// `disabled_reason` of an endpoint disabled by this rule.
    public static let failingReason = "failing_continuously"

    /// `PAYPIPE_WEBHOOK_DISABLE_AFTER` (5 days by default, as Svix).
    public var disableAfter: Double

    public init(disableAfter: Double = 5 * 86_400) {
        self.disableAfter = disableAfter
    }

    public struct Decision: Sendable, Equatable {
        /// The new state of every endpoint whose row changes (nothing for a healthy endpoint without a row).
        public var updates: [WebhookEndpoint: EndpointHealth]
        /// The endpoints this decision disables, in order: each gets one `endpoint.disabled` event.
        public var disabled: [WebhookEndpoint]

        /// The endpoints this decision disables, with their new state.
        public var newlyDisabled: [WebhookEndpoint: EndpointHealth] {
            Dictionary(uniqueKeysWithValues: disabled.map { ($0, updates[$0]!) })
        }
    }

    /// Whether `observations` can change any row, given `tracked`: the endpoints that had a row when the batch's
    /// prepare read them (``WebhookEndpointStore/rows(of:on:)``). When not, the notify stage records no health at all
    /// (no savepoint, no lock, no write): a success on an endpoint without a row changes nothing in ``decide(_:current:)``.
    /// A failure, or any observation of an endpoint with a row (a success clears `failing_since`, moves
    /// `last_success_at`), goes through the locked read, ``decide(_:current:)`` and the write, with all the batch's
    /// observations.
    ///
    /// The race this accepts: another worker may insert an endpoint's first failure between this batch's prepare and
    /// its record. A success of this batch on that endpoint is then not recorded, and the row says failing since that
    /// failure. Without this shortcut the same success was already lost whenever this batch's record ran before the
    /// other worker's commit (the lock found no row); the window grows from that interval to one round (prepare to
    /// record: the POSTs, bounded by the webhook timeout and the gate's wait). Why that is safe: every delivery
    /// prepared after that commit sees the row, so the next success on the endpoint clears `failing_since` as before;
    /// a success can be missed only if its batch was prepared before the failure that started the period committed,
    /// so it answered at most one round after that failure. The missed success counts as a request not made: the
    /// period runs from that failure, and the endpoint is disabled only by a failure `disableAfter` (5 days by
    /// default) after it with no success recorded in between, as the rule treats an endpoint that got no request in
    /// between. Its `last_success_at` is not moved either; the next recorded success moves it.
    public static func mayChange(_ observations: [EndpointObservation], tracked: Set<WebhookEndpoint>) -> Bool {
        observations.contains { $0.error != nil || tracked.contains($0.endpoint) }
    }

    /// Folds `observations` (any order) into `current` (the rows that exist; absent = healthy, never failed).
    /// An endpoint already disabled keeps its state: a request another worker sent before the disabling changes
    /// nothing, and only an operator re-enables it.
    public func decide(_ observations: [EndpointObservation], current: [WebhookEndpoint: EndpointHealth]) -> Decision {
        var updates: [WebhookEndpoint: EndpointHealth] = [:]
        var disabled: [WebhookEndpoint] = []
        let byEndpoint = Dictionary(grouping: observations, by: \.endpoint)
        for endpoint in byEndpoint.keys.sorted() {
            let existing = current[endpoint]
            var health = existing ?? EndpointHealth()
            guard !health.isDisabled else { continue }
            for observation in byEndpoint[endpoint]!.sorted(by: { $0.at < $1.at }) {
                if let error = observation.error {
                    let since = health.failingSince ?? observation.at
                    health.failingSince = since
                    health.lastFailureAt = max(health.lastFailureAt ?? observation.at, observation.at)
                    health.lastError = error
                    if observation.at.timeIntervalSince(since) >= disableAfter {
                        health.disabledAt = observation.at
                        health.disabledReason = Self.failingReason
                        disabled.append(endpoint)
                        break
                    }
                } else {
                    health.failingSince = nil
                    health.lastSuccessAt = max(health.lastSuccessAt ?? observation.at, observation.at)
                }
            }
            // A success for an endpoint that never failed needs no row; an unchanged row needs no write.
            if existing == nil, health.failingSince == nil { continue }
            if health != existing { updates[endpoint] = health }
        }
        return Decision(updates: updates, disabled: disabled)
    }
}

/// SQL for `webhook_endpoints` (migration 6), its only writer: the health of each merchant webhook endpoint, shared
/// by every notify worker. The decisions are ``EndpointHealthPolicy``'s; this type reads and writes them set-based.
public struct WebhookEndpointStore: Sendable {
    public init() {}

    /// One row as listed by `paypipe webhooks endpoints`.
    public struct Row: Sendable, Equatable {
        public var endpoint: WebhookEndpoint
        public var health: EndpointHealth
        public var updatedAt: Date
    }

    static let columns = "merchant_id, url, failing_since, last_failure_at, last_success_at, last_error, disabled_at, disabled_reason, updated_at"

    /// The rows of `endpoints` that exist, unlocked (one index lookup for the batch), for phase 1 of the notify stage:
    /// the disabled ones hold their deliveries, and an endpoint without a row is one whose successes need no write
    /// (``EndpointHealthPolicy/mayChange(_:tracked:)``).
    public func rows(of endpoints: Set<WebhookEndpoint>, on connection: PostgresConnection) throws -> [WebhookEndpoint: EndpointHealth] {
        guard !endpoints.isEmpty else { return [:] }
        let keys = endpoints.sorted()
        let rows = try connection.query(
            """
            SELECT \(Self.columns) FROM webhook_endpoints e
            JOIN unnest($1::text[], $2::text[]) AS k(merchant_id, url) USING (merchant_id, url)
            """, [PostgresArray(keys.map(\.merchantId)), PostgresArray(keys.map(\.url))])
        return Dictionary(try rows.map(Self.row).map { ($0.endpoint, $0.health) }, uniquingKeysWith: { first, _ in first })
    }

    /// The rows of `endpoints` that exist, locked (`FOR UPDATE`, in key order so that workers settling overlapping
    /// batches cannot deadlock) until the caller's transaction ends: read, decide, ``write(_:on:)``.
    public func lockedRows(of endpoints: Set<WebhookEndpoint>, on transaction: PostgresConnection) throws -> [WebhookEndpoint: EndpointHealth] {
        guard !endpoints.isEmpty else { return [:] }
        let keys = endpoints.sorted()
        let rows = try transaction.query(
            """
            SELECT \(Self.columns) FROM webhook_endpoints
            WHERE (merchant_id, url) IN (SELECT * FROM unnest($1::text[], $2::text[]))
            ORDER BY merchant_id, url FOR UPDATE
            """, [PostgresArray(keys.map(\.merchantId)), PostgresArray(keys.map(\.url))])
        return Dictionary(try rows.map(Self.row).map { ($0.endpoint, $0.health) }, uniquingKeysWith: { first, _ in first })
    }

    /// Writes the decided states in one statement (insert or replace). A row another worker inserted meanwhile for a
    /// new endpoint is overwritten with this worker's view, which saw the same failures at about the same time.
    public func write(_ updates: [WebhookEndpoint: EndpointHealth], on connection: PostgresConnection) throws {
        guard !updates.isEmpty else { return }
        let entries = updates.sorted { $0.key < $1.key }
        try connection.query(
            """
            INSERT INTO webhook_endpoints (merchant_id, url, failing_since, last_failure_at, last_success_at, last_error,
                                           disabled_at, disabled_reason, updated_at)
            SELECT *, clock_timestamp() FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[],
                                                    $5::timestamptz[], $6::text[], $7::timestamptz[], $8::text[])
            ON CONFLICT (merchant_id, url) DO UPDATE SET
                failing_since = EXCLUDED.failing_since, last_failure_at = EXCLUDED.last_failure_at,
                last_success_at = EXCLUDED.last_success_at, last_error = EXCLUDED.last_error,
                disabled_at = EXCLUDED.disabled_at, disabled_reason = EXCLUDED.disabled_reason, updated_at = clock_timestamp()
            """,
            [PostgresArray(entries.map(\.key.merchantId)), PostgresArray(entries.map(\.key.url)),
             PostgresArray(entries.map(\.value.failingSince)), PostgresArray(entries.map(\.value.lastFailureAt)),
             PostgresArray(entries.map(\.value.lastSuccessAt)), PostgresArray(entries.map(\.value.lastError)),
             PostgresArray(entries.map(\.value.disabledAt)), PostgresArray(entries.map(\.value.disabledReason))])
    }

    /// Every tracked endpoint (failing or disabled at least once), disabled first, then by merchant and URL.
    public func list(merchantId: String? = nil, disabledOnly: Bool = false, on connection: PostgresConnection) throws -> [Row] {
        let rows = try connection.query(
            """
            SELECT \(Self.columns) FROM webhook_endpoints
            WHERE ($1::text IS NULL OR merchant_id = $1) AND (NOT $2::boolean OR disabled_at IS NOT NULL)
            ORDER BY disabled_at IS NULL, merchant_id, url
            """, [merchantId, disabledOnly])
        return try rows.map(Self.row)
    }

    /// How many endpoints are disabled (`paypipe_webhook_endpoints_disabled`).
    public func disabledCount(on connection: PostgresConnection) throws -> Int {
        let rows = try connection.query("SELECT count(*) AS n FROM webhook_endpoints WHERE disabled_at IS NOT NULL")
        return Int(try rows.first?.decode("n", as: Int64.self) ?? 0)
    }

    /// Re-enables the merchant's disabled endpoints (all of them, or the one with `url`) and forgets their failure
    /// record, so the next failure starts a fresh period. Returns the endpoints enabled.
    public func enable(merchantId: String, url: String?, on connection: PostgresConnection) throws -> [WebhookEndpoint] {
        let rows = try connection.query(
            """
            UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL, updated_at = clock_timestamp()
            WHERE merchant_id = $1 AND ($2::text IS NULL OR url = $2) AND disabled_at IS NOT NULL
            RETURNING merchant_id, url
            """, [merchantId, url])
        return try rows.map { WebhookEndpoint(merchantId: try $0.decode("merchant_id", as: String.self), url: try $0.decode("url", as: String.self)) }
            .sorted()
    }

    private static func row(_ row: PostgresRow) throws -> Row {
        Row(
            endpoint: WebhookEndpoint(merchantId: try row.decode("merchant_id", as: String.self), url: try row.decode("url", as: String.self)),
            health: EndpointHealth(
                failingSince: try row.decode("failing_since", as: Date?.self), lastFailureAt: try row.decode("last_failure_at", as: Date?.self),
                lastSuccessAt: try row.decode("last_success_at", as: Date?.self), lastError: try row.decode("last_error", as: String?.self),
                disabledAt: try row.decode("disabled_at", as: Date?.self), disabledReason: try row.decode("disabled_reason", as: String?.self)),
            updatedAt: try row.decode("updated_at", as: Date.self))
    }
}
