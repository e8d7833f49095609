import PaymentStages
import Pipeline

// paypipe-decrypt: consumes paypipe.decrypt (fed by paypipe.jobs / payment.requested), verifies and
// decrypts Apple Pay tokens, stores card data encrypted, hands off to paypipe.authorize. Jobs whose merchant lists
// `publishers` are screened first (PublisherScreen).
WorkerLauncher.run(stage: .decrypt, components: { ReconcilerComponent.components(for: $0.stage) }) { configuration, logger in
    try DecryptStage.fromEnvironment(configuration, logger: logger).publisherScreened
}
