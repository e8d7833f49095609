import Pipeline
import Postgres

extension NotifyStage {
    /// The Standard Webhooks retry schedule (delay after each failure): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h; with the
    /// default `PAYPIPE_MAX_RETRIES` (8) the last tier repeats, giving 9 attempts over about 1.5 days.
    public static let webhookRetryDelays = "5s,5m,30m,2h,5h,10h"

    /// The environment `paypipe-notify` runs with: the process environment, plus `PAYPIPE_RETRY_DELAYS` defaulting to
    /// the webhook schedule instead of the pipeline's short one (``WorkerRuntime/RetrySchedule/standard``) — merchants'
    /// endpoints are down for minutes or hours, not seconds. An explicit `PAYPIPE_RETRY_DELAYS` still wins (tests).
    public static func workerEnvironment(_ base: EnvironmentReader = EnvironmentReader()) -> EnvironmentReader {
        var values = base.values
        if values[RuntimeSettings.retryDelays.name] == nil { values[RuntimeSettings.retryDelays.name] = webhookRetryDelays }
        return EnvironmentReader(values)
    }

    /// `PAYPIPE_WEBHOOK_ALLOW_PRIVATE`: explicit 1/0, else on in sandbox (local runs, docker compose) and off in
    /// production, the default deployment.
    public static func allowsPrivateTargets(_ deployment: DeploymentEnvironment, environment: EnvironmentReader) throws(ConfigurationError) -> Bool {
        try environment.read(PaymentSettings.webhookAllowPrivate, default: deployment == .sandbox)
    }

    /// Builds the stage for `paypipe-notify`. Reads `PAYPIPE_DATA_KEY` (or `_FILE`, plus `_PREVIOUS`: merchant
    /// webhook secrets are sealed with it), `PAYPIPE_MERCHANT_CACHE_TTL` (5s),
    /// `PAYPIPE_WEBHOOK_ALLOW_PRIVATE` (default on in sandbox, off in production), `PAYPIPE_WEBHOOK_TIMEOUT` (15s),
    /// `PAYPIPE_WEBHOOK_MAX_CONCURRENCY` (4 per endpoint), `PAYPIPE_WEBHOOK_BREAKER_FAILURES` (5) and
    /// `PAYPIPE_WEBHOOK_BREAKER_OPEN` (30s), `PAYPIPE_WEBHOOK_MAX_PAUSE` (5m: the longest `Retry-After` obeyed by
    /// pausing the endpoint), `PAYPIPE_WEBHOOK_DISABLE_AFTER` (5d: an endpoint failing that long without a success
    /// is disabled), `PAYPIPE_WEBHOOK_RATE` (requests per second per endpoint; 0, the default: no limit) and
    /// `PAYPIPE_RESULTS_TIMING` (`outcome`, the default, or `webhook`: when the results event is published).
    public static func fromEnvironment(_ configuration: WorkerConfiguration, logger: Logger, environment: EnvironmentReader = EnvironmentReader()) throws -> NotifyStage {
        let keyring = try DataKeyring.load(environment, deployment: configuration.environment)
        let merchantCacheSeconds = try environment.read(PaymentSettings.merchantCacheTTL)
        let allowPrivate = try allowsPrivateTargets(configuration.environment, environment: environment)
        let timeout = try environment.read(PaymentSettings.webhookTimeout)
        let maxConcurrent = try environment.read(PaymentSettings.webhookMaxConcurrency)
        let breakerFailures = try environment.read(PaymentSettings.webhookBreakerFailures)
        let breakerOpen = try environment.read(PaymentSettings.webhookBreakerOpen)
        let maxPause = try environment.read(PaymentSettings.webhookMaxPause)
        let disableAfter = try environment.read(PaymentSettings.webhookDisableAfter)
        let rate = try environment.read(PaymentSettings.webhookRate)
        let resultsTiming = try environment.read(PaymentSettings.resultsTiming)
        let vault = DataVault(keyring: keyring)
        logger.info("notify_configured", [
            ("allowPrivateTargets", .bool(allowPrivate)), ("timeoutSeconds", .double(timeout)),
            ("retryDelays", .string(configuration.retrySchedule.delays.map { String($0) }.joined(separator: ","))),
            ("maxRetries", .int(configuration.retrySchedule.maxRetries)),
            ("disableAfterSeconds", .double(disableAfter)), ("ratePerSecond", .double(rate)),
            ("resultsTiming", .string(resultsTiming.rawValue)),
        ])
        return NotifyStage(
            directory: MerchantDirectory(store: MerchantStore(vault: vault), ttl: merchantCacheSeconds),
            urlGuard: WebhookURLGuard(allowPrivate: allowPrivate),
            retrySchedule: configuration.retrySchedule,
            httpConfiguration: .init(connectTimeout: min(5, timeout), totalTimeout: timeout, followRedirects: false),
            gate: EndpointGate(policy: EndpointGatePolicy(maxConcurrent: maxConcurrent, failureThreshold: breakerFailures, openSeconds: breakerOpen,
                                                          maxPauseSeconds: maxPause, maxWait: timeout), stage: .notify),
            healthPolicy: EndpointHealthPolicy(disableAfter: disableAfter), rate: rate, logger: logger, resultsTiming: resultsTiming)
    }
}

extension NotifyStage {
    /// The notify series' names (registered below, counted by `committed`, `observe` and ``upkeep``).
    static let exhaustedMetric = "paypipe_webhooks_exhausted_total"
    static let eventsMetric = "paypipe_webhook_events_total"
    static let disabledMetric = "paypipe_webhook_endpoints_disabled"
    static let healthFailuresMetric = "paypipe_webhook_health_failures_total"

    /// The webhook gate's `paypipe_circuits_open{stage="notify"}`, `paypipe_webhooks_exhausted_total`, the operational
    /// events published (`paypipe_webhook_events_total{type}`), the disabled endpoints (a gauge set by ``upkeep``
    /// from the shared table, so every worker reports the same number: aggregate with `max`) and failures to record
    /// endpoint health, registered once, at start. Counters start at 0 so an alert on their increase has a series to
    /// watch.
    public func attach(metrics registry: MetricsRegistry) {
        gate.attach(metrics: registry)
        metrics.attach(registry) { registry in
            registry.register(Self.exhaustedMetric, kind: .counter, help: "Webhook deliveries that ran out of attempts (dead-lettered retries_exhausted).")
            registry.increment(Self.exhaustedMetric, labels: ["stage": "notify"], by: 0)
            registry.register(Self.eventsMetric, kind: .counter, help: "Operational events committed for paypipe.results (endpoint.disabled, webhook.exhausted).")
            for kind in OperationalEvent.Kind.allCases { registry.increment(Self.eventsMetric, labels: ["type": kind.rawValue], by: 0) }
            registry.register(Self.disabledMetric, kind: .gauge, help: "Webhook endpoints disabled for failing continuously (all workers' shared view).")
            registry.set(Self.disabledMetric, labels: [:], to: 0)
            registry.register(Self.healthFailuresMetric, kind: .counter, help: "Batches whose endpoint health could not be recorded (database error).")
            registry.increment(Self.healthFailuresMetric, labels: [:], by: 0)
        }
    }

    /// Every reconciler round, off any payment's path: `paypipe_webhook_endpoints_disabled` from `webhook_endpoints`.
    public func upkeep(database: PostgresConnection, logger: Logger) throws {
        let disabled = try WebhookEndpointStore().disabledCount(on: database)
        metrics.report { $0.set(Self.disabledMetric, labels: [:], to: Double(disabled)) }
    }
}

// The reconciler's hook (ReconcilingStage.swift): what the stage adds to each reconciler round, if anything.
extension NotifyStage: ReconcilingStage {}
