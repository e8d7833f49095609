import HTTP

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
