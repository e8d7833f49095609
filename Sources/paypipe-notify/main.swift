import PaymentStages
import Pipeline

// paypipe-notify: consumes paypipe.notify, POSTs each terminal payment's signed event to the merchant's webhook
// (Standard Webhooks), publishes it to paypipe.results, marks the payment done. Also hands recorded credential events
// to itself (CredentialEventRelay). Retries default to the webhook schedule (NotifyStage.webhookRetryDelays) unless
// PAYPIPE_RETRY_DELAYS is set.
let environment = NotifyStage.workerEnvironment()
WorkerLauncher.run(stage: .notify, environment: environment, components: { stage in
    let reconciler = ReconcilerComponent.components(for: stage)
    return { @Sendable context in reconciler(context) + CredentialEventRelay.components(context) }
}) { configuration, logger in
    try NotifyStage.fromEnvironment(configuration, logger: logger, environment: environment)
}
