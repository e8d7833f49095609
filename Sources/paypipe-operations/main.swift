import PaymentStages
import Pipeline

// paypipe-operations: consumes paypipe.operations (capture, void and refund jobs from paypipe.jobs), performs each
// exactly once at the merchant's processor (its connector's update or refund, reconciled before any resend) and hands the
// finished operation to paypipe.notify for its event. Operations whose merchant lists `publishers` are screened first
// (PublisherScreen).
let registry = MetricsRegistry()
WorkerLauncher.run(stage: .operations, registry: registry, components: { ReconcilerComponent.components(for: $0.stage) }) { configuration, logger in
    try OperationsWorker.fromEnvironment(configuration, logger: logger).publisherScreened
}
