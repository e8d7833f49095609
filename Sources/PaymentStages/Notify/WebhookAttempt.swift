import HTTP

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

/// How the notify stage treats the result of one POST (Standard Webhooks §"Delivery"): 2xx is success, 410 disables
/// the endpoint, everything else — 3xx (redirects are not followed), 4xx, 429/502/504 throttling, 5xx, timeouts and
/// connection failures — is retried on the schedule.
public enum WebhookResponseClass: Sendable, Equatable {
    case delivered
    case gone
    /// The SSRF check of the connected address refused the POST before any byte was sent (DNS rebinding): final, like
    /// the guard's own refusal. `error` is `ssrf_refused: …`.
    case refused(error: String)
    /// `error` is what `webhook_deliveries.error` records, e.g. `http_503 retry-after=30s` or `timeout`.
    case retry(error: String)

    public static func classify(status: Int, retryAfter: String?) -> WebhookResponseClass {
        switch status {
        case 200...299: return .delivered
        case 410: return .gone
        default:
            var error = "http_\(status)"
            // RetryAfter clamps to a day, so the conversion cannot trap whatever the endpoint sent.
            if let seconds = RetryAfter.seconds(retryAfter) { error += " retry-after=\(Int(seconds.rounded(.down)))s" }
            return .retry(error: error)
        }
    }

    public static func classify(_ failure: HTTPClientError) -> WebhookResponseClass {
        switch failure {
        case .timedOut: .retry(error: "timeout")
        case .couldNotConnect: .retry(error: "connect_failed")
        case .connectionReset: .retry(error: "connection_reset")
        case .tls: .retry(error: "tls_failed")
        case .tooLarge: .retry(error: "response_too_large")
        case .invalidRequest: .retry(error: "invalid_request")
        // Notify's only send gate is the SSRF check of the connected address (WebhookURLGuard.sendGate).
        case .refusedBeforeSending(let reason): .refused(error: "ssrf_refused: \(reason)")
        case .other(let code, _): .retry(error: "curl_\(code)")
        }
    }
}
