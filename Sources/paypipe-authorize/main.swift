import PaymentStages
import Pipeline

// paypipe-authorize: consumes paypipe.authorize, builds each payment's request for its merchant's connector from
// its stored card data, stores it encrypted, hands off to paypipe.submit.
WorkerLauncher.run(stage: .authorize, components: { ReconcilerComponent.components(for: $0) }) { configuration, logger in
    try AuthorizeStage.fromEnvironment(configuration, logger: logger)
}
