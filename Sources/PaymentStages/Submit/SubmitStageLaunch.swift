import Foundation
import HTTP
import Pipeline
import Postgres

extension SubmitStage {
    /// Builds the stage from the environment for `paypipe-submit`:
    /// - `PAYPIPE_DATA_KEY` (or `_FILE`, plus `_PREVIOUS`): opens stored requests and merchant secrets;
    /// - `PAYPIPE_GATEWAY_CONNECT_TIMEOUT` (5s), `PAYPIPE_GATEWAY_TIMEOUT` (30s, total per call),
    ///   `PAYPIPE_GATEWAY_CA_FILE` (extra CA bundle); TLS verification is always on for https, and https is required
    ///   outside sandbox (sandbox: also loopback and `PAYPIPE_SANDBOX_PLAIN_HTTP_HOSTS`, ``CardDataTransportPolicy``);
    ///   these timeouts are the `jwt` transport's;
    /// - `PAYPIPE_WEBSERVICES_CONNECT_TIMEOUT` (10s, connection retries included), `PAYPIPE_WEBSERVICES_TIMEOUT` (60s,
    ///   total per call): the `webservices` transport's, its SDK's defaults (a connector's own transport,
    ///   ``ConnectorPlugin/ownCallTimeout(_:)``);
    /// - `PAYPIPE_RECONCILE_GRACE` (30s, at least 2s: the margin after an attempt's send deadline plus total timeout
    ///   before it is queried), `PAYPIPE_MAX_STATUS_QUERIES` (5), `PAYPIPE_PAYMENT_DEADLINE` (10m);
    /// - `PAYPIPE_SEND_WINDOW` (5s: an AUTH not sent this long after its attempt was committed is not sent),
    ///   `PAYPIPE_NOT_FOUND_CONFIRMATIONS` (1: "not found" answers, 10 s apart, required before a resend);
    /// - `PAYPIPE_GATEWAY_BREAKER_FAILURES` (5), `PAYPIPE_GATEWAY_BREAKER_OPEN` (30s; old names `PAYPIPE_CIRCUIT_FAILURES`,
    ///   `PAYPIPE_CIRCUIT_OPEN`), `PAYPIPE_MERCHANT_CONCURRENCY` (4),
    ///   `PAYPIPE_GATEWAY_CONCURRENCY` (32: calls in flight per worker, each thread with a keep-alive connection);
    /// - `PAYPIPE_MERCHANT_CACHE_TTL` (5s).
    public static func fromEnvironment(
        _ configuration: WorkerConfiguration, logger: Logger, environment: EnvironmentReader = EnvironmentReader()
    ) throws -> SubmitStage {
        let keyring = try DataKeyring.load(environment, deployment: configuration.environment)
        let vault = DataVault(keyring: keyring)
        let http = HTTPClientConfiguration(
            connectTimeout: try environment.read(PaymentSettings.gatewayConnectTimeout),
            totalTimeout: try gatewayTimeout(environment),
            caCertificatePath: try environment.raw(PaymentSettings.gatewayCAFile))
        let settings = SubmitSettings(
            reconcileGrace: try reconcileGrace(environment),
            maxInconclusiveQueries: try environment.read(PaymentSettings.maxStatusQueries),
            paymentDeadline: try environment.read(PaymentSettings.paymentDeadline),
            circuitFailureThreshold: try environment.read(PaymentSettings.gatewayBreakerFailures),
            circuitOpenSeconds: try environment.read(PaymentSettings.gatewayBreakerOpen),
            merchantConcurrency: try environment.read(PaymentSettings.merchantConcurrency),
            callConcurrency: try environment.read(PaymentSettings.gatewayConcurrency),
            sendWindow: try sendWindow(environment),
            notFoundConfirmations: try environment.read(PaymentSettings.notFoundConfirmations))
        if configuration.concurrency * configuration.batchSize > settings.callConcurrency {
            // Safe (the send window refuses an AUTH that queued too long, and it is re-planned), and the default: a
            // fact for the operator who tunes for a slow gateway, not a fault.
            logger.info("submit_batches_exceed_gateway_concurrency", [
                ("lanes", .int(configuration.concurrency)), ("batchSize", .int(configuration.batchSize)),
                ("gatewayConcurrency", .int(settings.callConcurrency)),
            ])
        }
        let merchantCacheSeconds = try environment.read(PaymentSettings.merchantCacheTTL)
        logger.info("submit_configured", [
            ("gatewayTimeout", .double(http.totalTimeout)), ("webservicesTimeout", .double(try environment.read(PaymentSettings.webservicesTimeout))),
            ("reconcileGrace", .double(settings.reconcileGrace)),
            ("paymentDeadline", .double(settings.paymentDeadline)), ("sendWindow", .double(settings.sendWindow)),
            ("notFoundConfirmations", .int(settings.notFoundConfirmations)),
        ])
        let cardDataTransport = CardDataTransportPolicy.fromEnvironment(environment, deployment: configuration.environment)
        return SubmitStage(
            directory: MerchantDirectory(store: MerchantStore(vault: vault), ttl: merchantCacheSeconds),
            requests: GatewayRequestStore(vault: vault),
            client: try ConnectorRegistry.connectors(ConnectorWorkerSettings(http: http, transport: cardDataTransport, environment: environment)),
            settings: settings)
    }

    /// The stage as `settings` configure it: its protocol (``SubmitSettings/submitProtocol``), its timings, and its
    /// call-out (``configuredCallOut(_:http:clock:)``).
    public init(
        directory: MerchantDirectory, requests: GatewayRequestStore, client: any PaymentGateway,
        settings: SubmitSettings = SubmitSettings(), clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(directory: directory, requests: requests, client: client, machine: settings.submitProtocol,
                  reconcileGrace: settings.reconcileGrace, sendWindow: settings.sendWindow,
                  callOut: Self.configuredCallOut(settings, http: client.http, clock: clock), clock: clock)
    }

    /// The gateway calls' threads and gate as `settings` configure them: `callConcurrency` keep-alive clients, a
    /// circuit per endpoint (`circuitFailureThreshold`, `circuitOpenSeconds`), `merchantConcurrency` slots per merchant
    /// (a call waits at most a second for one), the send window, and at most three rounds a batch.
    static func configuredCallOut(_ settings: SubmitSettings, http: HTTPClientConfiguration, clock: @escaping @Sendable () -> Date) -> CallOut {
        CallOut(
            pool: HTTPClientPool(size: settings.callConcurrency, configuration: http, name: "paypipe-submit-call"),
            gate: EndpointGate(
                policy: EndpointGatePolicy(maxConcurrent: settings.merchantConcurrency, failureThreshold: settings.circuitFailureThreshold,
                                           openSeconds: settings.circuitOpenSeconds, maxWait: 1),
                stage: .submit, clock: clock),
            sendWindow: settings.sendWindow, rounds: 3)
    }

    /// The gateway gate's `paypipe_circuits_open{stage="submit"}` and the stage's `paypipe_late_answers_total`
    /// (registered once, at start).
    public func attach(metrics registry: MetricsRegistry) {
        gate.attach(metrics: registry)
        metrics.attach(registry) { registry in
            registry.register(Self.lateAnswersMetric, kind: .counter,
                              help: "Gateway answers that arrived after their payment had ended, by outcome (an authorised one on a failed payment goes to review).")
        }
    }

    /// The least `PAYPIPE_RECONCILE_GRACE`: an AUTH's `exp` is rounded up to the second after its send deadline plus
    /// the total timeout, and the gateway's clock may differ from the database's by about a second.
    public static let minimumReconcileGrace: Double = PaymentSettings.reconcileGrace.range.lowerBound

    static func gatewayTimeout(_ environment: EnvironmentReader) throws(ConfigurationError) -> Double {
        try environment.read(PaymentSettings.gatewayTimeout)
    }

    static func reconcileGrace(_ environment: EnvironmentReader) throws(ConfigurationError) -> Double {
        try environment.read(PaymentSettings.reconcileGrace)
    }

    static func sendWindow(_ environment: EnvironmentReader) throws(ConfigurationError) -> Double {
        try environment.read(PaymentSettings.sendWindow)
    }

    /// Seconds from an attempt's start to its reconciliation with this environment's settings: send window + the
    /// longest total timeout of a call (the pool's or a connector's own transport's) + grace. A re-drive sooner finds
    /// the attempt still possibly in flight (`paypipe reconcile` refuses).
    public static func reconciliationSeconds(_ environment: EnvironmentReader = EnvironmentReader()) throws(ConfigurationError) -> Double {
        try sendWindow(environment) + max(gatewayTimeout(environment), ConnectorRegistry.longestOwnTimeout(environment)) + reconcileGrace(environment)
    }
}

// The reconciler's hook (ReconcilingStage.swift): what the stage adds to each reconciler round, if anything.
extension SubmitStage: ReconcilingStage {
    /// The deadline sweep (``SubmitDeadlineSweep``); returns the hand-offs to notification.
    public func reconcile(on connection: PostgresConnection) throws -> [(stage: Stage, message: StageMessage)] {
        try SubmitDeadlineSweep(requests: requests, machine: machine, legacySettleSeconds: legacySettleSeconds).expire(on: connection)
    }
}
