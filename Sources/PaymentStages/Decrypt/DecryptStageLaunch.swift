import ApplePay
import Pipeline

extension DecryptStage {
    /// Builds the stage from the environment (data key, trust root, merchant cache) for `paypipe-decrypt`.
    public static func fromEnvironment(_ configuration: WorkerConfiguration, logger: Logger, environment: EnvironmentReader = EnvironmentReader()) throws -> DecryptStage {
        let keyring = try DataKeyring.load(environment, deployment: configuration.environment)
        let settings = try DecryptConfiguration(environment: environment, deployment: configuration.environment)
        if settings.trustRootOverridden {
            logger.warning("applepay_trust_root_overridden", [("environment", .string(configuration.environment.rawValue))])
        }
        let vault = DataVault(keyring: keyring)
        return DecryptStage(
            directory: MerchantDirectory(store: MerchantStore(vault: vault), ttl: settings.merchantCacheSeconds),
            cardData: CardDataStore(vault: vault),
            decryptor: ApplePayDecryptor(configuration: settings.verifier), maxQueueAge: settings.maxQueueAge)
    }
}

extension DecryptStage {
    /// The worker's handler: this stage with its upkeep (``DecryptWorker``) behind the publisher check
    /// (``PublisherScreen``), as `paypipe-decrypt` runs it.
    public var publisherScreened: PublisherScreen<DecryptWorker> {
        PublisherScreen(DecryptWorker(self), directory: directory) { $0.key.merchantId }
    }

    /// `paypipe_data_key_seals_total`, `paypipe_tokens_decrypted_total` and `paypipe_payments_by_token_type_total`:
    /// what the stage counts as it seals and decrypts (registered once, at start).
    public func attach(metrics registry: MetricsRegistry) {
        cardData.vault.attach(metrics: registry)
        keyUsage.attach(metrics: registry)
        tokenTypes.attach(metrics: registry)
    }
}

// The reconciler's hook (ReconcilingStage.swift): what the stage adds to each reconciler round, if anything.
extension DecryptStage: ReconcilingStage {}
