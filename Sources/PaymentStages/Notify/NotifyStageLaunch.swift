import Pipeline

extension NotifyStage {
    /// The Standard Webhooks retry schedule (delay after each failure): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h; with the
    /// default `PAYPIPE_MAX_RETRIES` (8) the last tier repeats, giving 9 attempts over about 1.5 days.
    public static let webhookRetryDelays = "5s,5m,30m,2h,5h,10h"

    /// The environment `paypipe-notify` runs with: the process environment, plus `PAYPIPE_RETRY_DELAYS` defaulting to
    /// the webhook schedule instead of the pipeline's short one (``WorkerRuntime/RetrySchedule/standard``) — merchants'
    /// endpoints are down for minutes or hours, not seconds. An explicit `PAYPIPE_RETRY_DELAYS` still wins (tests).
    public static func workerEnvironment(_ base: EnvironmentReader = EnvironmentReader()) -> EnvironmentReader {
        var values = base.values
        if values["PAYPIPE_RETRY_DELAYS"] == nil { values["PAYPIPE_RETRY_DELAYS"] = webhookRetryDelays }
        return EnvironmentReader(values)
    }

    /// `PAYPIPE_WEBHOOK_ALLOW_PRIVATE`: explicit 1/0, else on in sandbox (local runs, docker compose) and off in
    /// production, the default deployment.
    public static func allowsPrivateTargets(_ deployment: DeploymentEnvironment, environment: EnvironmentReader) throws(ConfigurationError) -> Bool {
        try environment.flag("PAYPIPE_WEBHOOK_ALLOW_PRIVATE", default: deployment == .sandbox)
    }

    /// Builds the stage for `paypipe-notify`. Reads `PAYPIPE_DATA_KEY` (or `_FILE`, plus `_PREVIOUS`: merchant
    /// webhook secrets are sealed with it), `PAYPIPE_MERCHANT_CACHE_TTL` (5s),
    /// `PAYPIPE_WEBHOOK_ALLOW_PRIVATE` (default on in sandbox, off in production), `PAYPIPE_WEBHOOK_TIMEOUT` (15s),
    /// `PAYPIPE_WEBHOOK_MAX_CONCURRENCY` (4 per endpoint), `PAYPIPE_WEBHOOK_BREAKER_FAILURES` (5) and
    /// `PAYPIPE_WEBHOOK_BREAKER_OPEN` (30s), `PAYPIPE_WEBHOOK_MAX_PAUSE` (5m: the longest `Retry-After` obeyed by
    /// pausing the endpoint), `PAYPIPE_WEBHOOK_DISABLE_AFTER` (5d: an endpoint failing that long without a success
    /// is disabled) and `PAYPIPE_WEBHOOK_RATE` (requests per second per endpoint; 0, the default: no limit).
    public static func fromEnvironment(_ configuration: WorkerConfiguration, logger: Logger, environment: EnvironmentReader = EnvironmentReader()) throws -> NotifyStage {
        let keyring = try DataKeyring.load(environment, deployment: configuration.environment)
        let merchantCacheSeconds = try environment.seconds("PAYPIPE_MERCHANT_CACHE_TTL", default: 5, range: 0...3600)
        let allowPrivate = try allowsPrivateTargets(configuration.environment, environment: environment)
        let timeout = try environment.seconds("PAYPIPE_WEBHOOK_TIMEOUT", default: 15, range: 1...120)
        let maxConcurrent = try environment.integer("PAYPIPE_WEBHOOK_MAX_CONCURRENCY", default: 4, range: 1...256)
        let breakerFailures = try environment.integer("PAYPIPE_WEBHOOK_BREAKER_FAILURES", default: 5, range: 1...1000)
        let breakerOpen = try environment.seconds("PAYPIPE_WEBHOOK_BREAKER_OPEN", default: 30, range: 0...3600)
        let maxPause = try environment.seconds("PAYPIPE_WEBHOOK_MAX_PAUSE", default: 300, range: 0...86_400)
        let disableAfter = try environment.seconds("PAYPIPE_WEBHOOK_DISABLE_AFTER", default: 5 * 86_400, range: 1...(90 * 86_400))
        let rate = try environment.double("PAYPIPE_WEBHOOK_RATE", default: 0, range: 0...10_000)
        let vault = DataVault(keyring: keyring)
        logger.info("notify_configured", [
            ("allowPrivateTargets", .bool(allowPrivate)), ("timeoutSeconds", .double(timeout)),
            ("retryDelays", .string(configuration.retrySchedule.delays.map { String($0) }.joined(separator: ","))),
            ("maxRetries", .int(configuration.retrySchedule.maxRetries)),
            ("disableAfterSeconds", .double(disableAfter)), ("ratePerSecond", .double(rate)),
        ])
        return NotifyStage(
            directory: MerchantDirectory(store: MerchantStore(vault: vault), ttl: merchantCacheSeconds),
            urlGuard: WebhookURLGuard(allowPrivate: allowPrivate),
            retrySchedule: configuration.retrySchedule,
            httpConfiguration: .init(connectTimeout: min(5, timeout), totalTimeout: timeout, followRedirects: false),
            gate: EndpointGate(policy: EndpointGatePolicy(maxConcurrent: maxConcurrent, failureThreshold: breakerFailures, openSeconds: breakerOpen,
                                                          maxPauseSeconds: maxPause, maxWait: timeout), stage: .notify),
            healthPolicy: EndpointHealthPolicy(disableAfter: disableAfter), rate: rate, logger: logger)
    }
}
