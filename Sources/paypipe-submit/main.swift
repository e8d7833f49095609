import PaymentStages
import Pipeline

// paypipe-submit: consumes paypipe.submit, sends each prepared payment's AUTH to the gateway exactly once (querying
// the gateway instead of resending when the outcome is unknown), records the result and hands off to paypipe.notify.
let registry = MetricsRegistry()
WorkerLauncher.run(stage: .submit, registry: registry, components: { ReconcilerComponent.components(for: $0) }) { configuration, logger in
    try SubmitStage.fromEnvironment(configuration, logger: logger)
}
