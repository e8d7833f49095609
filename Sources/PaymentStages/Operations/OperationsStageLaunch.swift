import HTTP
import Pipeline

extension OperationsWorker {
    /// Builds the stage and its upkeep round from the environment for `paypipe-operations`, with the submit stage's gateway settings (one
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
    ) throws -> OperationsWorker {
        let keyring = try DataKeyring.load(environment, deployment: configuration.environment)
        let http = HTTPClientConfiguration(connectTimeout: try environment.read(PaymentSettings.webservicesConnectTimeout),
                                           totalTimeout: try environment.read(PaymentSettings.webservicesTimeout),
                                           caCertificatePath: try environment.raw(PaymentSettings.gatewayCAFile))
        // Read in the order they always were (a first bad variable is the one reported).
        let directory = MerchantDirectory(store: MerchantStore(vault: DataVault(keyring: keyring)),
                                          ttl: try environment.read(PaymentSettings.merchantCacheTTL))
        let connectors = try ConnectorRegistry.connectors(ConnectorWorkerSettings(
            http: http, transport: .fromEnvironment(environment, deployment: configuration.environment), environment: environment))
        let steps = OperationSteps(maxInconclusiveQueries: try environment.read(PaymentSettings.maxStatusQueries))
        let sendWindow = try SubmitStage.sendWindow(environment), reconcileGrace = try SubmitStage.reconcileGrace(environment)
        let settlementPoll = try environment.read(PaymentSettings.settlementPoll)
        let stage = OperationsStage(
            directory: directory, connectors: connectors, steps: steps, sendWindow: sendWindow, reconcileGrace: reconcileGrace,
            gate: EndpointGatePolicy(
                maxConcurrent: try environment.read(PaymentSettings.merchantConcurrency),
                failureThreshold: try environment.read(PaymentSettings.gatewayBreakerFailures),
                openSeconds: try environment.read(PaymentSettings.gatewayBreakerOpen), maxWait: 1))
        // The upkeep round (suspensions, the settlement poll, merchant-token events): the stage's calls and writes, off
        // a payment's path.
        let merchantTokens = try MerchantTokenUpkeep.fromEnvironment(environment, vault: DataVault(keyring: keyring))
        let worker = OperationsWorker(stage, upkeepRound: OperationsUpkeepRound(stage: stage, settlementPoll: settlementPoll, merchantTokens: merchantTokens))
        logger.info("operations_configured", [
            ("webservicesTimeout", .double(http.totalTimeout)), ("sendWindow", .double(stage.sendWindow)),
            ("reconcileGrace", .double(stage.reconcileGrace)), ("merchantTokenEvents", .bool(merchantTokens != nil)),
        ])
        return worker
    }

    /// The worker's handler: the stage and its upkeep behind the publisher check (``PublisherScreen``), as
    /// `paypipe-operations` runs it.
    public var publisherScreened: PublisherScreen<OperationsWorker> {
        PublisherScreen(self, directory: operations.directory) { $0.merchantId }
    }
}

extension OperationsStage {
    /// The stage with its endpoint gate built from `gate` (a circuit per endpoint URL, `maxConcurrent` calls in flight
    /// per merchant; by default the gate's defaults, waiting at most a second for a slot).
    public init(directory: MerchantDirectory, connectors: GatewayConnectors, steps: OperationSteps = OperationSteps(),
                sendWindow: Double = 5, reconcileGrace: Double = 30, gate: EndpointGatePolicy = EndpointGatePolicy(maxWait: 1)) {
        self.init(directory: directory, connectors: connectors, steps: steps, sendWindow: sendWindow, reconcileGrace: reconcileGrace,
                  gate: EndpointGate(policy: gate, stage: .operations))
    }
}

// The stage names itself to the runtime; the reconciler's hook is the worker's (``OperationsWorker/reconcile(on:)``),
// so the stage alone cannot be handed to the reconciler by mistake.
extension OperationsStage: PaymentStageHandler {}
