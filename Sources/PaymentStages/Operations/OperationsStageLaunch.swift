import HTTP
import Pipeline

extension OperationsStage {
    /// Builds the stage from the environment for `paypipe-operations`, with the submit stage's gateway settings (one
    /// meaning each): `PAYPIPE_DATA_KEY` (merchant secrets), `PAYPIPE_GATEWAY_CA_FILE`,
    /// `PAYPIPE_WEBSERVICES_CONNECT_TIMEOUT` (10s), `PAYPIPE_WEBSERVICES_TIMEOUT` (60s), `PAYPIPE_SEND_WINDOW` (5s),
    /// `PAYPIPE_RECONCILE_GRACE` (30s), `PAYPIPE_MAX_STATUS_QUERIES` (5: inconclusive status queries of a lost
    /// TRANSACTIONUPDATE answer before review), `PAYPIPE_MERCHANT_CACHE_TTL` (5s), and its own
    /// `PAYPIPE_CIRCUIT_FAILURES` (5), `PAYPIPE_CIRCUIT_OPEN` (30s), `PAYPIPE_MERCHANT_CONCURRENCY` (4: the endpoint
    /// gate's, as submit's), and its own `PAYPIPE_SETTLEMENT_POLL` (6h: how often a captured payment's settlement is
    /// queried).
    public static func fromEnvironment(
        _ configuration: WorkerConfiguration, logger: Logger, environment: EnvironmentReader = EnvironmentReader()
    ) throws -> OperationsStage {
        let keyring = try DataKeyring.load(environment, deployment: configuration.environment)
        let webservices = try SubmitStage.webservicesTransport(environment)
        let http = HTTPClientConfiguration(connectTimeout: webservices.connectTimeout, totalTimeout: webservices.totalTimeout,
                                           caCertificatePath: environment.raw("PAYPIPE_GATEWAY_CA_FILE"))
        let stage = OperationsStage(
            directory: MerchantDirectory(store: MerchantStore(vault: DataVault(keyring: keyring)),
                                         ttl: try environment.seconds("PAYPIPE_MERCHANT_CACHE_TTL", default: 5, range: 0...3600)),
            client: TrustPaymentsClient(http: http, transport: .fromEnvironment(environment, deployment: configuration.environment),
                                        webservices: webservices),
            steps: OperationSteps(maxInconclusiveQueries: try environment.integer("PAYPIPE_MAX_STATUS_QUERIES", default: 5, range: 1...100)),
            sendWindow: try SubmitStage.sendWindow(environment), reconcileGrace: try SubmitStage.reconcileGrace(environment),
            settlementPoll: try environment.seconds("PAYPIPE_SETTLEMENT_POLL", default: 6 * 3600, range: 1...(31 * 86_400)),
            gate: EndpointGatePolicy(
                maxConcurrent: try environment.integer("PAYPIPE_MERCHANT_CONCURRENCY", default: 4, range: 1...256),
                failureThreshold: try environment.integer("PAYPIPE_CIRCUIT_FAILURES", default: 5, range: 1...1000),
                openSeconds: try environment.seconds("PAYPIPE_CIRCUIT_OPEN", default: 30, range: 0...3600), maxWait: 1))
        logger.info("operations_configured", [
            ("webservicesTimeout", .double(webservices.totalTimeout)), ("sendWindow", .double(stage.sendWindow)),
            ("reconcileGrace", .double(stage.reconcileGrace)),
        ])
        return stage
    }
}
