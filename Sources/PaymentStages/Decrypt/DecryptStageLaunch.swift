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
    /// The worker's handler: this stage behind the publisher check (``PublisherScreen``), as `paypipe-decrypt` runs it.
    public var publisherScreened: PublisherScreen<DecryptStage> {
        PublisherScreen(self, directory: directory) { $0.key.merchantId }
    }
}
