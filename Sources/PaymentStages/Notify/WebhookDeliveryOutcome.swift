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
