import HTTP
import Pipeline

extension SubmitStage {
    /// Builds the stage from the environment for `paypipe-submit`:
    /// - `PAYPIPE_DATA_KEY` (or `_FILE`, plus `_PREVIOUS`): opens stored requests and merchant secrets;
    /// - `PAYPIPE_GATEWAY_CONNECT_TIMEOUT` (5s), `PAYPIPE_GATEWAY_TIMEOUT` (30s, total per call),
    ///   `PAYPIPE_GATEWAY_CA_FILE` (extra CA bundle); TLS verification is always on for https, and https is required
    ///   outside sandbox (sandbox: also loopback and `PAYPIPE_SANDBOX_PLAIN_HTTP_HOSTS`, ``CardDataTransportPolicy``);
    /// - `PAYPIPE_RECONCILE_GRACE` (30s), `PAYPIPE_MAX_STATUS_QUERIES` (5), `PAYPIPE_PAYMENT_DEADLINE` (10m);
    /// - `PAYPIPE_CIRCUIT_FAILURES` (5), `PAYPIPE_CIRCUIT_OPEN` (30s), `PAYPIPE_MERCHANT_CONCURRENCY` (4),
    ///   `PAYPIPE_GATEWAY_CONCURRENCY` (8: calls in flight per worker, each thread with a keep-alive connection);
    /// - `PAYPIPE_MERCHANT_CACHE_TTL` (5s).
    public static func fromEnvironment(_ configuration: WorkerConfiguration, logger: Logger, environment: EnvironmentReader = EnvironmentReader()) throws -> SubmitStage {
        let keyring = try DataKeyring.load(environment, deployment: configuration.environment)
        let vault = DataVault(keyring: keyring)
        let http = HTTPClientConfiguration(
            connectTimeout: try environment.seconds("PAYPIPE_GATEWAY_CONNECT_TIMEOUT", default: 5, range: 0.1...120),
            totalTimeout: try environment.seconds("PAYPIPE_GATEWAY_TIMEOUT", default: 30, range: 0.2...600),
            caCertificatePath: environment.raw("PAYPIPE_GATEWAY_CA_FILE"))
        let settings = SubmitSettings(
            reconcileGrace: try environment.seconds("PAYPIPE_RECONCILE_GRACE", default: 30, range: 0...3600),
            maxInconclusiveQueries: try environment.integer("PAYPIPE_MAX_STATUS_QUERIES", default: 5, range: 1...100),
            paymentDeadline: try environment.seconds("PAYPIPE_PAYMENT_DEADLINE", default: 600, range: 1...86_400),
            circuitFailureThreshold: try environment.integer("PAYPIPE_CIRCUIT_FAILURES", default: 5, range: 1...1000),
            circuitOpenSeconds: try environment.seconds("PAYPIPE_CIRCUIT_OPEN", default: 30, range: 0...3600),
            merchantConcurrency: try environment.integer("PAYPIPE_MERCHANT_CONCURRENCY", default: 4, range: 1...256),
            callConcurrency: try environment.integer("PAYPIPE_GATEWAY_CONCURRENCY", default: 8, range: 1...256))
        let merchantCacheSeconds = try environment.seconds("PAYPIPE_MERCHANT_CACHE_TTL", default: 5, range: 0...3600)
        logger.info("submit_configured", [
            ("gatewayTimeout", .double(http.totalTimeout)), ("reconcileGrace", .double(settings.reconcileGrace)),
            ("paymentDeadline", .double(settings.paymentDeadline)),
        ])
        return SubmitStage(
            directory: MerchantDirectory(store: MerchantStore(vault: vault), ttl: merchantCacheSeconds),
            cardData: CardDataStore(vault: vault), requests: GatewayRequestStore(vault: vault),
            client: TrustPaymentsClient(
                http: http, transport: .fromEnvironment(environment, deployment: configuration.environment)),
            settings: settings)
    }
}
