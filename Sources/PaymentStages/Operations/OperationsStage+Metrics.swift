import Pipeline

/// Deferred payments' visibility on the operations worker (docs/operations.md): how many wait for their amount now
/// (a gauge every worker sets from the shared table at each upkeep round: aggregate with `max`), and how many were
/// completed or expired (counted once committed, from start-up; Prometheus sums the workers). Both present at 0.
final class DeferredMetrics: Sendable {
    static let awaitingMetric = "paypipe_payments_awaiting_amount"
    static let outcomesMetric = "paypipe_deferred_payments_total"

    private let metrics = AttachedMetrics()

    func attach(metrics registry: MetricsRegistry) {
        metrics.attach(registry) { registry in
            registry.register(Self.awaitingMetric, kind: .gauge, help: "Deferred payments waiting for their amount (all workers' shared view).")
            registry.set(Self.awaitingMetric, labels: [:], to: 0)
            registry.register(Self.outcomesMetric, kind: .counter,
                              help: "Deferred payments that left awaiting_amount: completed (amount set, back to authorize) or expired (prime_expired).")
            for outcome in ["completed", "expired"] { registry.increment(Self.outcomesMetric, labels: ["outcome": outcome], by: 0) }
        }
    }

    func awaiting(_ count: Int) {
        metrics.report { $0.set(Self.awaitingMetric, labels: [:], to: Double(count)) }
    }

    func committed(completed: Int, expired: Int) {
        metrics.report { registry in
            if completed > 0 { registry.increment(Self.outcomesMetric, labels: ["outcome": "completed"], by: Double(completed)) }
            if expired > 0 { registry.increment(Self.outcomesMetric, labels: ["outcome": "expired"], by: Double(expired)) }
        }
    }
}

extension OperationsStage {
    /// The worker's own series: deferred payments' (``DeferredMetrics``), then the upkeep round's (``upkeepRound``: the
    /// merchant-token puller's).
    public func attach(metrics registry: MetricsRegistry) {
        deferredMetrics.attach(metrics: registry)
        upkeepRound?.attach(metrics: registry)
    }
}
