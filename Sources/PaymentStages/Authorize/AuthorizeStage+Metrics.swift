import Pipeline

extension AuthorizeStage {
    /// `paypipe_data_key_seals_total`: authorize seals every gateway request under the data key.
    public func attach(metrics registry: MetricsRegistry) {
        requests.vault.attach(metrics: registry)
    }
}
