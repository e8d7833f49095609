import Pipeline
import Postgres

extension NotifyStage {
    static let exhaustedMetric = "paypipe_webhooks_exhausted_total"
    static let eventsMetric = "paypipe_webhook_events_total"
    static let disabledMetric = "paypipe_webhook_endpoints_disabled"
    static let healthFailuresMetric = "paypipe_webhook_health_failures_total"

    /// The webhook gate's `paypipe_circuits_open{stage="notify"}`, `paypipe_webhooks_exhausted_total`, the operational
    /// events published (`paypipe_webhook_events_total{type}`), the disabled endpoints (a gauge set by ``upkeep``
    /// from the shared table, so every worker reports the same number: aggregate with `max`) and failures to record
    /// endpoint health. Counters start at 0 so an alert on their increase has a series to watch.
    public func attach(metrics registry: MetricsRegistry) {
        gate.attach(metrics: registry)
        metrics.attach(registry) { registry in
            registry.register(Self.exhaustedMetric, kind: .counter, help: "Webhook deliveries that ran out of attempts (dead-lettered retries_exhausted).")
            registry.increment(Self.exhaustedMetric, labels: ["stage": "notify"], by: 0)
            registry.register(Self.eventsMetric, kind: .counter, help: "Operational events committed for paypipe.results (endpoint.disabled, webhook.exhausted).")
            for kind in OperationalEvent.Kind.allCases { registry.increment(Self.eventsMetric, labels: ["type": kind.rawValue], by: 0) }
            registry.register(Self.disabledMetric, kind: .gauge, help: "Webhook endpoints disabled for failing continuously (all workers' shared view).")
            registry.set(Self.disabledMetric, labels: [:], to: 0)
            registry.register(Self.healthFailuresMetric, kind: .counter, help: "Batches whose endpoint health could not be recorded (database error).")
            registry.increment(Self.healthFailuresMetric, labels: [:], by: 0)
        }
    }

    /// Counts a committed delivery whose failed attempt was its last (``NotifyDecision/Settlement/exhausted(error:)``),
    /// and its `webhook.exhausted` event.
    func countExhausted() {
        metrics.report { $0.increment(Self.exhaustedMetric, labels: ["stage": "notify"]) }
        countEvent(.webhookExhausted)
    }

    func countEvent(_ kind: OperationalEvent.Kind) {
        metrics.report { $0.increment(Self.eventsMetric, labels: ["type": kind.rawValue]) }
    }

    func countHealthFailure() {
        metrics.report { $0.increment(Self.healthFailuresMetric, labels: [:]) }
    }

    /// Every reconciler round: `paypipe_webhook_endpoints_disabled` from `webhook_endpoints`.
    public func upkeep(database: PostgresConnection, logger: Logger) throws {
        let disabled = try WebhookEndpointStore().disabledCount(on: database)
        metrics.report { $0.set(Self.disabledMetric, labels: [:], to: Double(disabled)) }
    }
}
