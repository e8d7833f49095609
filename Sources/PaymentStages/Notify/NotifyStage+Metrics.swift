import Pipeline

extension NotifyStage {
    static let exhaustedMetric = "paypipe_webhooks_exhausted_total"

    /// The webhook gate's `paypipe_circuits_open{stage="notify"}` and `paypipe_webhooks_exhausted_total` (0 from the
    /// start, so an alert on its increase has a series to watch).
    public func attach(metrics registry: MetricsRegistry) {
        gate.attach(metrics: registry)
        metrics.attach(registry) { registry in
            registry.register(Self.exhaustedMetric, kind: .counter, help: "Webhook deliveries that ran out of attempts (dead-lettered retries_exhausted).")
            registry.increment(Self.exhaustedMetric, labels: ["stage": "notify"], by: 0)
        }
    }

    /// Counts a committed delivery whose failed attempt was its last (the retry schedule has no further tier).
    func countIfExhausted(_ message: NotifyMessage) {
        if case .retry = router.retrySchedule.decision(previousRetries: message.previousRetries) { return }
        metrics.report { $0.increment(Self.exhaustedMetric, labels: ["stage": "notify"]) }
    }
}
