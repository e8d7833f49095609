import Foundation
import Postgres

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
    public func lock(_ endpoints: Set<WebhookEndpoint>, on transaction: PostgresConnection) throws -> [WebhookEndpoint: EndpointHealth] {
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
