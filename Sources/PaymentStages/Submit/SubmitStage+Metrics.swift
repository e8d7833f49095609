import Pipeline

extension SubmitStage {
    /// The gateway breaker's `paypipe_circuits_open{stage="submit"}`.
    public func attach(metrics registry: MetricsRegistry) {
        breaker.attach(metrics: registry)
    }
}
