import Foundation

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
