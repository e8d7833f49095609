import Pipeline

extension SubmitStage {
    /// The gateway gate's `paypipe_circuits_open{stage="submit"}`.
    public func attach(metrics registry: MetricsRegistry) {
        gate.attach(metrics: registry)
    }
}
