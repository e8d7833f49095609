import Pipeline

extension AuthorizeStage {
    /// Builds the stage from the environment for `paypipe-authorize`: `PAYPIPE_DATA_KEY` (or `_FILE`, plus
    /// `_PREVIOUS`) opens card data and seals the claims; `PAYPIPE_MERCHANT_CACHE_TTL` (5s) bounds how long a
    /// merchant's gateway settings are cached.
    public static func fromEnvironment(_ configuration: WorkerConfiguration, logger: Logger, environment: EnvironmentReader = EnvironmentReader()) throws -> AuthorizeStage {
        let keyring = try DataKeyring.load(environment, deployment: configuration.environment)
        let merchantCacheSeconds = try environment.read(PaymentSettings.merchantCacheTTL)
        let vault = DataVault(keyring: keyring)
        logger.info("authorize_configured", [("merchantCacheSeconds", .double(merchantCacheSeconds))])
        return AuthorizeStage(
            directory: MerchantDirectory(store: MerchantStore(vault: vault), ttl: merchantCacheSeconds),
            cardData: CardDataStore(vault: vault),
            requests: GatewayRequestStore(vault: vault))
    }
}

extension AuthorizeStage {
    /// `paypipe_data_key_seals_total`: authorize seals every gateway request under the data key (registered once, at
    /// start).
    public func attach(metrics registry: MetricsRegistry) {
        requests.vault.attach(metrics: registry)
    }
}

// The reconciler's hook (ReconcilingStage.swift): what the stage adds to each reconciler round, if anything.
extension AuthorizeStage: ReconcilingStage {}
