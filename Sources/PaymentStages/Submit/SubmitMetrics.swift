import Pipeline

/// The submit stage's own series, on the worker's registry.
struct SubmitMetrics: Sendable {
    static let lateAnswers = "paypipe_late_answers_total"
    let registry: MetricsRegistry

    init(registry: MetricsRegistry) {
        self.registry = registry
        registry.register(Self.lateAnswers, kind: .counter,
                          help: "Gateway answers that arrived after their payment had ended, by outcome (an authorised one on a failed payment goes to review).")
    }

    func lateAnswer(outcome: String) {
        registry.increment(Self.lateAnswers, labels: ["stage": "submit", "outcome": outcome])
    }
}

extension SubmitStage {
    /// The gateway gate's `paypipe_circuits_open{stage="submit"}`.
    public func attach(metrics registry: MetricsRegistry) {
        gate.attach(metrics: registry)
    }
}
