import HTTP
import Pipeline

extension OperationsStage {
    /// Builds the stage from the environment for `paypipe-operations`, with the submit stage's gateway settings (one
    /// meaning each): `PAYPIPE_DATA_KEY` (merchant secrets), `PAYPIPE_GATEWAY_CA_FILE`,
    /// `PAYPIPE_WEBSERVICES_CONNECT_TIMEOUT` (10s), `PAYPIPE_WEBSERVICES_TIMEOUT` (60s), `PAYPIPE_SEND_WINDOW` (5s),
    /// `PAYPIPE_RECONCILE_GRACE` (30s), `PAYPIPE_MAX_STATUS_QUERIES` (5: inconclusive status queries of a lost
    /// update answer before review), `PAYPIPE_MERCHANT_CACHE_TTL` (5s), and its own
    /// `PAYPIPE_GATEWAY_BREAKER_FAILURES` (5), `PAYPIPE_GATEWAY_BREAKER_OPEN` (30s; old names `PAYPIPE_CIRCUIT_FAILURES`,
    /// `PAYPIPE_CIRCUIT_OPEN`), `PAYPIPE_MERCHANT_CONCURRENCY` (4: the endpoint
    /// gate's, as submit's), and its own `PAYPIPE_SETTLEMENT_POLL` (6h: how often a captured payment's settlement is
    /// queried).
    public static func fromEnvironment(
        _ configuration: WorkerConfiguration, logger: Logger, environment: EnvironmentReader = EnvironmentReader()
    ) throws -> OperationsStage {
        let keyring = try DataKeyring.load(environment, deployment: configuration.environment)
        let http = HTTPClientConfiguration(connectTimeout: try environment.read(PaymentSettings.webservicesConnectTimeout),
                                           totalTimeout: try environment.read(PaymentSettings.webservicesTimeout),
                                           caCertificatePath: try environment.raw(PaymentSettings.gatewayCAFile))
        var stage = OperationsStage(
            directory: MerchantDirectory(store: MerchantStore(vault: DataVault(keyring: keyring)),
                                         ttl: try environment.read(PaymentSettings.merchantCacheTTL)),
            connectors: try ConnectorRegistry.connectors(ConnectorWorkerSettings(
                http: http, transport: .fromEnvironment(environment, deployment: configuration.environment), environment: environment)),
            steps: OperationSteps(maxInconclusiveQueries: try environment.read(PaymentSettings.maxStatusQueries)),
            sendWindow: try SubmitStage.sendWindow(environment), reconcileGrace: try SubmitStage.reconcileGrace(environment),
            settlementPoll: try environment.read(PaymentSettings.settlementPoll),
            gate: EndpointGatePolicy(
                maxConcurrent: try environment.read(PaymentSettings.merchantConcurrency),
                failureThreshold: try environment.read(PaymentSettings.gatewayBreakerFailures),
                openSeconds: try environment.read(PaymentSettings.gatewayBreakerOpen), maxWait: 1))
        stage.merchantTokens = try MerchantTokenUpkeep.fromEnvironment(environment, vault: DataVault(keyring: keyring))
        logger.info("operations_configured", [
            ("webservicesTimeout", .double(http.totalTimeout)), ("sendWindow", .double(stage.sendWindow)),
            ("reconcileGrace", .double(stage.reconcileGrace)), ("merchantTokenEvents", .bool(stage.merchantTokens != nil)),
        ])
        return stage
    }
}
