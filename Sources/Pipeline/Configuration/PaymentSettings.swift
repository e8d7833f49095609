/// The payment side's variables: keys, the Apple Pay trust, and each stage's settings, declared once with their
/// defaults and ranges. The stages read through these declarations (`environment.read(PaymentSettings.x)`), and
/// ``ConfigurationCatalogue`` lists them with the runtime's for docs/configuration.md and the workers' `--help`.
///
/// Adding a variable: one declaration here (or in ``WorkerRuntime/RuntimeSettings`` for a runtime one), its entry in
/// `all`, then regenerate docs/configuration.md (its header says how).
public enum PaymentSettings {
    static let decrypt = ConfigurationReader.worker(Stage.decrypt.name)
    static let authorize = ConfigurationReader.worker(Stage.authorize.name)
    static let submit = ConfigurationReader.worker(Stage.submit.name)
    static let notify = ConfigurationReader.worker(Stage.notify.name)
    static let operations = ConfigurationReader.worker(Stage.operations.name)
    static let merchantReaders = [decrypt, authorize, submit, notify, operations]
    static let keyReaders: [ConfigurationReader] = [.everyWorker, .cli]
    static let gatewayCallers = [submit, operations]

    // MARK: Keys and trust
    public static let dataKey = ConfigurationVariable(
        "PAYPIPE_DATA_KEY", readers: keyReaders, default: "required (or `PAYPIPE_DATA_KEY_FILE`)", format: "base64 of 32 bytes",
        "the key sealing card data and merchant secrets at rest (`openssl rand -base64 32`); docs/security.md")
    public static let dataKeyFile = ConfigurationVariable(
        "PAYPIPE_DATA_KEY_FILE", readers: keyReaders, default: "unset", format: "path",
        "a file holding `PAYPIPE_DATA_KEY` (used when that is unset); outside sandbox private to the worker's user")
    public static let previousDataKeys = ConfigurationVariable(
        "PAYPIPE_DATA_KEY_PREVIOUS", readers: keyReaders, default: "unset", format: "comma-separated base64 keys",
        "older keys still accepted for opening data during a rotation")
    public static let previousDataKeysFile = ConfigurationVariable(
        "PAYPIPE_DATA_KEY_PREVIOUS_FILE", readers: keyReaders, default: "unset", format: "path",
        "a file of older keys (one per line or comma-separated), added to `PAYPIPE_DATA_KEY_PREVIOUS`")
    public static let trustRoot = ConfigurationVariable(
        TrustRootPolicy.variable, readers: keyReaders, default: "unset: the pinned Apple Root CA - G3", format: "PEM path",
        "PEM of another root, sandbox only (`paypipe sandbox init` makes one): outside `PAYPIPE_ENV=sandbox` every worker and `paypipe token decrypt` exit 78 when it is set")
    public static let sandboxPlainHTTPHosts = ConfigurationVariable(
        CardDataTransportPolicy.plainHTTPHostsVariable, readers: gatewayCallers + [.cli], default: "unset", format: "comma-separated host names",
        "sandbox only: hosts the gateway URL may reach over plain `http://` besides loopback (docker compose: `gateway-sim`); outside sandbox card data goes over `https://` only")
    public static let sandboxDirectory = TextSetting(
        "PAYPIPE_SANDBOX_DIR", readers: [.cli], default: "var/sandbox", format: "directory",
        "where `paypipe sandbox init` keeps the sandbox PKI, merchant and data key")

    // MARK: Merchants
    public static let merchantCacheTTL = DurationSetting(
        "PAYPIPE_MERCHANT_CACHE_TTL", readers: merchantReaders, default: 5, range: 0...3600,
        "how soon workers see `paypipe merchant apply` changes")

    // MARK: Decrypt
    public static let signingTimeMaxAge = DurationSetting(
        "PAYPIPE_APPLEPAY_MAX_AGE", readers: [decrypt], default: 300, range: 1...86_400,
        "oldest accepted token signing time (relative to the job's publish `timestamp`, else its first receipt: docs/job-contract.md); older fails `signing_time_out_of_range`")
    public static let signingTimeMaxFutureSkew = DurationSetting(
        "PAYPIPE_APPLEPAY_MAX_FUTURE_SKEW", readers: [decrypt], default: 60, range: 0...3600,
        "newest accepted signing time; also how far after first receipt a publish `timestamp` may be")
    public static let maxQueueAge = DurationSetting(
        "PAYPIPE_MAX_QUEUE_AGE", readers: [decrypt], default: VerificationClock.defaultMaxQueueAge, range: 0...(30 * 86_400),
        "how far before first receipt a publish `timestamp` may be and still be the signing-time clock; older ones are ignored")

    // MARK: Gateway calls (submit, operations)
    public static let gatewayConnectTimeout = DurationSetting(
        "PAYPIPE_GATEWAY_CONNECT_TIMEOUT", readers: [submit], default: 5, range: 0.1...120, "TCP + TLS set-up of a gateway call (every connector's, the `webservices` transport's aside)")
    public static let gatewayTimeout = DurationSetting(
        "PAYPIPE_GATEWAY_TIMEOUT", readers: [submit, .cli], default: 30, range: 0.2...600,
        "the whole gateway call (the `webservices` transport's aside); an answer after it is uncertain and reconciled")
    public static let gatewayCAFile = ConfigurationVariable(
        "PAYPIPE_GATEWAY_CA_FILE", readers: gatewayCallers, default: "unset: the system's CAs", format: "PEM path",
        "an extra CA bundle for gateway TLS; verification is always on")
    public static let webservicesConnectTimeout = DurationSetting(
        "PAYPIPE_WEBSERVICES_CONNECT_TIMEOUT", readers: gatewayCallers, default: 10, range: 0.1...120,
        "connecting, retries included (the `webservices` transport; its SDK's value); operations uses it for its calls")
    public static let webservicesTimeout = DurationSetting(
        "PAYPIPE_WEBSERVICES_TIMEOUT", readers: gatewayCallers + [.cli], default: 60, range: 0.2...600,
        "the whole `webservices` call (the SDK's receive timeout); an answer after it is uncertain and reconciled")
    public static let reconcileGrace = DurationSetting(
        "PAYPIPE_RECONCILE_GRACE", readers: gatewayCallers + [.cli], default: 30, range: 2...3600,
        "margin after `send_deadline + timeout` before an unanswered attempt is queried; at least 2s (lower values are refused at start-up)")
    public static let maxStatusQueries = IntegerSetting<Int>(
        "PAYPIPE_MAX_STATUS_QUERIES", readers: gatewayCallers, default: 5, range: 1...100,
        "inconclusive status queries before `needs_review` (an operation: before review)")
    public static let paymentDeadline = DurationSetting(
        "PAYPIPE_PAYMENT_DEADLINE", readers: [submit], default: 600, range: 1...86_400,
        "no AUTH after this age; the reconciler fails `decrypted`/`prepared` payments older than this")
    public static let sendWindow = DurationSetting(
        "PAYPIPE_SEND_WINDOW", readers: gatewayCallers + [.cli], default: 5, range: 0.1...600,
        "an attempt whose bytes have not left this long after it was committed is not sent (`not_sent`, re-planned)")
    public static let notFoundConfirmations = IntegerSetting<Int>(
        "PAYPIPE_NOT_FOUND_CONFIRMATIONS", readers: [submit], default: 1, range: 1...10,
        "\"not found\" answers, at least 10 s apart, required before an AUTH is resent")
    public static let gatewayBreakerFailures = IntegerSetting<Int>(
        "PAYPIPE_GATEWAY_BREAKER_FAILURES", readers: gatewayCallers, default: 5, range: 1...1000, aliases: ["PAYPIPE_CIRCUIT_FAILURES"],
        "consecutive transport failures (refused, timeout, reset, 5xx) that open a gateway endpoint's circuit")
    public static let gatewayBreakerOpen = DurationSetting(
        "PAYPIPE_GATEWAY_BREAKER_OPEN", readers: gatewayCallers, default: 30, range: 0...3600, aliases: ["PAYPIPE_CIRCUIT_OPEN"],
        "how long an open gateway circuit refuses calls (messages park in the retry tiers, payments unchanged); then one trial call at a time until one succeeds (docs/architecture.md)")
    public static let merchantConcurrency = IntegerSetting<Int>(
        "PAYPIPE_MERCHANT_CONCURRENCY", readers: gatewayCallers, default: 4, range: 1...256,
        "gateway calls one merchant may have in flight per worker; a call that finds no slot within 1 s is not made and its message parks (`merchant_busy`)")
    public static let gatewayConcurrency = IntegerSetting<Int>(
        "PAYPIPE_GATEWAY_CONCURRENCY", readers: [submit], default: WorkerConfiguration.defaultGatewayConcurrency, range: 1...256,
        "gateway calls one submit worker runs at once: a batch's calls run concurrently on this many threads, each with a keep-alive connection")
    public static let settlementPoll = DurationSetting(
        "PAYPIPE_SETTLEMENT_POLL", readers: [operations], default: 6 * 3600, range: 1...(31 * 86_400),
        "how often a captured payment's settlement is queried")

    // MARK: Notify
    public static let webhookAllowPrivate = FlagSetting(
        "PAYPIPE_WEBHOOK_ALLOW_PRIVATE", readers: [notify], default: false, defaultText: "1 in sandbox, else 0",
        "allow webhook URLs resolving to loopback, private or other non-public addresses (the SSRF guard, docs/notify.md)")
    public static let webhookTimeout = DurationSetting(
        "PAYPIPE_WEBHOOK_TIMEOUT", readers: [notify], default: 15, range: 1...120, "total timeout of one webhook POST")
    public static let webhookMaxConcurrency = IntegerSetting<Int>(
        "PAYPIPE_WEBHOOK_MAX_CONCURRENCY", readers: [notify], default: 4, range: 1...256, "webhook requests in flight per endpoint (`scheme://host:port`) per worker")
    public static let webhookBreakerFailures = IntegerSetting<Int>(
        "PAYPIPE_WEBHOOK_BREAKER_FAILURES", readers: [notify], default: 5, range: 1...1000,
        "consecutive failures of a webhook endpoint that open its circuit")
    public static let webhookBreakerOpen = DurationSetting(
        "PAYPIPE_WEBHOOK_BREAKER_OPEN", readers: [notify], default: 30, range: 0...3600,
        "how long an open webhook circuit holds that endpoint's deliveries before one trial request")
    public static let webhookMaxPause = DurationSetting(
        "PAYPIPE_WEBHOOK_MAX_PAUSE", readers: [notify], default: 300, range: 0...86_400,
        "the longest `Retry-After` obeyed by pausing the endpoint")
    public static let webhookDisableAfter = DurationSetting(
        "PAYPIPE_WEBHOOK_DISABLE_AFTER", readers: [notify], default: 5 * 86_400, range: 1...(90 * 86_400),
        "an endpoint failing this long without a success is disabled (`paypipe webhooks endpoints enable`)")
    public static let webhookRate = DecimalSetting(
        "PAYPIPE_WEBHOOK_RATE", readers: [notify], default: 0, range: 0...10_000, defaultText: "0: no limit",
        "requests per second per endpoint and worker, unless the merchant document sets `webhook.ratePerSecond`")
    public static let resultsTiming = ChoiceSetting(
        "PAYPIPE_RESULTS_TIMING", readers: [notify], default: ResultsTiming.standard,
        "when the event goes to `paypipe.results`: `outcome`, as soon as notify has the final outcome, whatever the webhook's fate "
            + "(the webhook keeps its own retries); `webhook`, only once the webhook is settled (delivered, gone, refused or exhausted), "
            + "the behaviour before this variable. One results message per event either way (docs/notify.md)")

    public static let all: [ConfigurationVariable] = [
        dataKey, dataKeyFile, previousDataKeys, previousDataKeysFile, trustRoot, sandboxPlainHTTPHosts, sandboxDirectory.variable,
        merchantCacheTTL.variable, signingTimeMaxAge.variable, signingTimeMaxFutureSkew.variable, maxQueueAge.variable,
        gatewayConnectTimeout.variable, gatewayTimeout.variable, gatewayCAFile, webservicesConnectTimeout.variable,
        webservicesTimeout.variable, reconcileGrace.variable, maxStatusQueries.variable, paymentDeadline.variable,
        sendWindow.variable, notFoundConfirmations.variable, gatewayBreakerFailures.variable, gatewayBreakerOpen.variable,
        merchantConcurrency.variable, gatewayConcurrency.variable, settlementPoll.variable,
        webhookAllowPrivate.variable, webhookTimeout.variable, webhookMaxConcurrency.variable, webhookBreakerFailures.variable,
        webhookBreakerOpen.variable, webhookMaxPause.variable, webhookDisableAfter.variable, webhookRate.variable,
        resultsTiming.variable,
    ]
}

/// Every variable the workers and the operator CLI read: docs/configuration.md's first table, and what a worker's
/// `--help` lists. Development tools declare theirs apart (PayPipeDevTools' `DevToolSettings`).
public enum ConfigurationCatalogue {
    public static let production: [ConfigurationVariable] = RuntimeSettings.all + PaymentSettings.all + MerchantTokenSettings.all
}
