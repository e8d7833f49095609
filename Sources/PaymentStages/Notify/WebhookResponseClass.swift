import HTTP

/// How the notify stage treats the result of one POST (Standard Webhooks §"Delivery"): 2xx is success, 410 disables
/// the endpoint, everything else — 3xx (redirects are not followed), 4xx, 429/502/504 throttling, 5xx, timeouts and
/// connection failures — is retried on the schedule.
public enum WebhookResponseClass: Sendable, Equatable {
    case delivered
    case gone
    /// `error` is what `webhook_deliveries.error` records, e.g. `http_503 retry-after=30s` or `timeout`.
    case retry(error: String)

    public static func classify(status: Int, retryAfter: String?) -> WebhookResponseClass {
        switch status {
        case 200...299: return .delivered
        case 410: return .gone
        default:
            var error = "http_\(status)"
            if let seconds = RetryAfter.seconds(retryAfter) { error += " retry-after=\(Int(seconds))s" }
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
        case .refusedBeforeSending: .retry(error: "refused_before_sending")
        case .other(let code, _): .retry(error: "curl_\(code)")
        }
    }
}
