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
