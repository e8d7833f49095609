import Pipeline

/// The variables of the development and benchmark executables (never read by a worker): docs/configuration.md's
/// second table. The gateway simulator and the webhook receiver read through these declarations.
public enum DevToolSettings {
    static let simulator = [ConfigurationReader.tool("paypipe-gateway-sim")]
    static let receiver = [ConfigurationReader.tool("paypipe-webhook-receiver")]

    // MARK: paypipe-gateway-sim
    public static let simMerchants = ConfigurationVariable(
        "PAYPIPE_SIM_MERCHANTS", readers: simulator, default: "unset", format: "`jwtUsername=secret,…`",
        "the JWT face's users (one of the five user lists must name one; `paypipe sandbox init` writes them to services.env)")
    public static let simWebservicesUsers = ConfigurationVariable(
        "PAYPIPE_SIM_WEBSERVICES_USERS", readers: simulator, default: "unset", format: "`user=password,…`", "the `webservices` face's users")
    public static let simOPPTokens = ConfigurationVariable(
        "PAYPIPE_SIM_OPP_TOKENS", readers: simulator, default: "unset", format: "`token=entityId,…`", "the OPP face's bearer tokens and their entities")
    public static let simOPPUsers = ConfigurationVariable(
        "PAYPIPE_SIM_OPP_USERS", readers: simulator, default: "unset", format: "`user=password,…`", "the OPP face's legacy `authentication.userId`/`password` pairs")
    public static let simTapPayPartners = ConfigurationVariable(
        "PAYPIPE_SIM_TAPPAY_PARTNERS", readers: simulator, default: "unset", format: "`partnerKey=merchantId,…`", "the TapPay face's partner keys and their merchant ids")
    public static let simHost = TextSetting(
        "PAYPIPE_SIM_HOST", readers: simulator, default: "127.0.0.1", format: "IP address", "address the simulator binds")
    public static let simPort = IntegerSetting<UInt16>(
        "PAYPIPE_SIM_PORT", readers: simulator, default: 9180, range: 0...65535, "port the simulator listens on")
    public static let simSlow = DurationSetting(
        "PAYPIPE_SIM_SLOW", readers: simulator, default: 5, range: 0...600, "how long a timed-out answer (the `slow` amount, `PAYPIPE_SIM_TIMEOUT_RATE`) waits")
    public static let simFaultRate = DecimalSetting(
        "PAYPIPE_SIM_FAULT_RATE", readers: simulator, default: 0, range: 0...1, "share of requests answered with a gateway fault")
    public static let simTimeoutRate = DecimalSetting(
        "PAYPIPE_SIM_TIMEOUT_RATE", readers: simulator, default: 0, range: 0...1,
        "share of AUTHs recorded, then answered only after `PAYPIPE_SIM_SLOW` (with `PAYPIPE_SIM_RESET_RATE` at most 1)")
    public static let simResetRate = DecimalSetting(
        "PAYPIPE_SIM_RESET_RATE", readers: simulator, default: 0, range: 0...1, "share of AUTHs recorded, then their connection dropped")
    public static let simLoseRate = DecimalSetting(
        "PAYPIPE_SIM_LOSE_RATE", readers: simulator, default: 0, range: 0...1, "share of AUTHs dropped before processing")
    public static let simThreads = IntegerSetting<Int>(
        "PAYPIPE_SIM_THREADS", readers: simulator, default: 8, range: 1...256, "server threads (match `PAYPIPE_SIM_LATENCY` to the load)")
    public static let simQueryDelay = DurationSetting(
        "PAYPIPE_SIM_QUERY_DELAY", readers: simulator, default: 0, range: 0...60, "the longest random delay of a status query's answer")
    public static let simSeed = ConfigurationVariable(
        "PAYPIPE_SIM_SEED", readers: simulator, default: "unset: unseeded", format: "unsigned integer", "seed of the fault draws (repeatable chaos runs)")
    public static let simSettleDelay = DurationSetting(
        "PAYPIPE_SIM_SETTLE_DELAY", readers: simulator, default: 0, range: 0...86_400, defaultText: "unset: AUTHs never settle by themselves",
        "how long after an AUTH it settles (then it can be refunded)")
    public static let simSites = ConfigurationVariable(
        "PAYPIPE_SIM_SITES", readers: simulator, default: "unset: any", format: "comma-separated site references",
        "site references the JSON face accepts (others get 30006)")
    public static let simLatency = DurationSetting(
        "PAYPIPE_SIM_LATENCY", readers: simulator, default: 0, range: 0...60, "the wait before every answer (`scripts/bench --only scaling`)")
    public static let simAppleTokenAPIPort = IntegerSetting<UInt16>(
        "PAYPIPE_SIM_APPLE_TOKEN_API_PORT", readers: simulator, default: 0, range: 0...65535, defaultText: "unset: no Apple face",
        "port of the Apple merchant-token API face (mutual TLS on 127.0.0.1; 0: a free one); docs/merchant-tokens.md \"Sandbox\"")
    public static let simAppleTokenAPICertificate = ConfigurationVariable(
        "PAYPIPE_SIM_APPLE_TOKEN_API_CERT", readers: simulator, default: "required with the port", format: "PEM file path",
        "the Apple face's server certificate (scripts/lib/stack.sh mints it)")
    public static let simAppleTokenAPIKey = ConfigurationVariable(
        "PAYPIPE_SIM_APPLE_TOKEN_API_KEY", readers: simulator, default: "required with the port", format: "PEM file path",
        "the Apple face's server key")
    public static let simAppleTokenAPIClientCA = ConfigurationVariable(
        "PAYPIPE_SIM_APPLE_TOKEN_API_CLIENT_CA", readers: simulator, default: "required with the port", format: "PEM file path",
        "CA certificates a caller's client certificate (a merchant identity) must chain to")

    // MARK: paypipe-webhook-receiver
    public static let webhookSecret = ConfigurationVariable(
        "PAYPIPE_WEBHOOK_SECRET", readers: receiver, default: "required", format: "`whsec_…`, several space-separated during a rotation",
        "the secrets the receiver verifies Standard Webhooks signatures with (the merchant's, from services.env)")
    public static let receiverHost = TextSetting(
        "PAYPIPE_RECEIVER_HOST", readers: receiver, default: "127.0.0.1", format: "IP address", "address the receiver binds")
    public static let receiverPort = IntegerSetting<UInt16>(
        "PAYPIPE_RECEIVER_PORT", readers: receiver, default: 9190, range: 0...65535, "port of the receiver (the sandbox merchant's webhook URL)")
    public static let receiverFailFirstPercent = IntegerSetting<Int>(
        "PAYPIPE_RECEIVER_FAIL_FIRST_PERCENT", readers: receiver, default: 0, range: 0...100,
        "answer 503 to the first delivery of this share of events, to exercise retries")

    // MARK: Benchmarks (pg-bench, amqp-bench; scripts/test sets these for the tests too)
    public static let testDatabaseURL = ConfigurationVariable(
        "PAYPIPE_TEST_DATABASE_URL", readers: [.tool("pg-bench")], default: "`postgresql://postgres@127.0.0.1:5432/paypipe_test`",
        format: "`postgresql://` URL", "the database the benchmark (and the test suite) uses")
    public static let testAMQPURL = ConfigurationVariable(
        "PAYPIPE_TEST_AMQP_URL", readers: [.tool("amqp-bench")], default: "`amqp://guest:guest@127.0.0.1:5672/%2f`",
        format: "`amqp://` URL (or the first argument)", "the broker the benchmark (and the test suite) uses")

    public static let all: [ConfigurationVariable] = [
        simMerchants, simWebservicesUsers, simOPPTokens, simOPPUsers, simTapPayPartners, simHost.variable, simPort.variable,
        simSlow.variable, simFaultRate.variable, simTimeoutRate.variable, simResetRate.variable, simLoseRate.variable,
        simThreads.variable, simQueryDelay.variable, simSeed, simSettleDelay.variable, simSites, simLatency.variable,
        simAppleTokenAPIPort.variable, simAppleTokenAPICertificate, simAppleTokenAPIKey, simAppleTokenAPIClientCA,
        webhookSecret, receiverHost.variable, receiverPort.variable, receiverFailFirstPercent.variable,
        testDatabaseURL, testAMQPURL,
    ]
}
