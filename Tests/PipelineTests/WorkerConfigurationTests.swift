import Testing
@testable import Pipeline

@Suite struct WorkerConfigurationTests {
    /// Outside sandbox there are no URL defaults (``ConnectionSecurityPolicy``), so the documented defaults are
    /// checked in sandbox and production's own default separately.
    @Test func defaultsAreDocumented() throws {
        let configuration = try WorkerConfiguration(stage: .authorize, environment: EnvironmentReader(["PAYPIPE_ENV": "sandbox"]))
        #expect(configuration.amqpURL == "amqp://guest:guest@127.0.0.1:5672/%2f")
        #expect(configuration.databaseURL == "postgresql://postgres@127.0.0.1:5432/paypipe")
        #expect(configuration.insecureTransportAllowed == false)
        let production = try WorkerConfiguration(stage: .authorize, environment: EnvironmentReader([
            "PAYPIPE_AMQP_URL": "amqp://paypipe:s3cret@127.0.0.1:5672/%2f",
            "PAYPIPE_DATABASE_URL": "postgresql://paypipe:s3cret@127.0.0.1:5432/paypipe",
        ]))
        #expect(production.environment == .production, "production is the default PAYPIPE_ENV")
        #expect(configuration.logLevel == .info)
        #expect(configuration.prefetch == 100)
        #expect(configuration.metricsPort == 9102)
        #expect(configuration.heartbeatSeconds == 10)
        #expect(configuration.batchLingerSeconds == 0.010)
        #expect(configuration.retrySchedule == RetrySchedule.standard)
    }

    @Test func readsOverrides() throws {
        let configuration = try WorkerConfiguration(stage: .decrypt, environment: EnvironmentReader([
            "PAYPIPE_ENV": "sandbox", "PAYPIPE_PREFETCH": "300", "PAYPIPE_LOG_LEVEL": "DEBUG",
            "PAYPIPE_RETRY_DELAYS": "100ms,1s", "PAYPIPE_MAX_RETRIES": "3", "PAYPIPE_SHUTDOWN_TIMEOUT": "2m",
            "PAYPIPE_METRICS_PORT": "0", "PAYPIPE_AMQP_URL": "amqps://u:p@broker:5671/prod", "PAYPIPE_BATCH_LINGER": "0",
        ]))
        #expect(configuration.batchLingerSeconds == 0)
        #expect(configuration.environment == .sandbox)
        #expect(configuration.prefetch == 300)
        #expect(configuration.logLevel == .debug)
        #expect(configuration.retrySchedule == RetrySchedule(delays: [0.1, 1], maxRetries: 3))
        #expect(configuration.shutdownTimeoutSeconds == 120)
        #expect(configuration.metricsPort == 0)
    }

    @Test(arguments: [
        ("PAYPIPE_PREFETCH", "lots"), ("PAYPIPE_PREFETCH", "0"), ("PAYPIPE_ENV", "staging"),
        ("PAYPIPE_LOG_LEVEL", "loud"), ("PAYPIPE_RETRY_DELAYS", "1s,never"), ("PAYPIPE_METRICS_PORT", "70000"),
        ("PAYPIPE_AMQP_URL", "http://broker"), ("PAYPIPE_DATABASE_URL", "mysql://db"), ("PAYPIPE_SHUTDOWN_TIMEOUT", "-1s"),
        ("PAYPIPE_BATCH_LINGER", "2s"), ("PAYPIPE_BATCH_LINGER", "soon"),
    ])
    func invalidValuesNameTheVariable(variable: String, value: String) {
        #expect {
            try WorkerConfiguration(stage: .submit, environment: EnvironmentReader([variable: value]))
        } throws: { error in
            (error as? ConfigurationError)?.variable == variable
        }
    }

    @Test func secretURLsAreNotEchoed() {
        do {
            _ = try WorkerConfiguration(stage: .submit, environment: EnvironmentReader(["PAYPIPE_DATABASE_URL": "mysql://user:hunter2@db"]))
            Issue.record("expected an error")
        } catch {
            #expect(!error.description.contains("hunter2"))
        }
    }

    /// A replacement Apple Pay trust root is a sandbox-only setting, for every worker; empty counts as unset.
    @Test func aReplacedTrustRootIsRefusedOutsideSandbox() throws {
        let production = [
            "PAYPIPE_AMQP_URL": "amqps://paypipe:s3cret@broker:5671/%2f",
            "PAYPIPE_DATABASE_URL": "postgresql://paypipe:s3cret@db:5432/paypipe?sslmode=verify-full",
            "PAYPIPE_APPLEPAY_TRUST_ROOT": "/sandbox/pki/root.cert.pem",
        ]
        for stage in Stage.allCases {
            let error = #expect(throws: ConfigurationError.self) { try WorkerConfiguration(stage: stage, environment: EnvironmentReader(production)) }
            #expect(error?.variable == "PAYPIPE_APPLEPAY_TRUST_ROOT")
        }
        #expect(throws: ConfigurationError.self) {
            try TrustRootPolicy.replacementPath(EnvironmentReader(production), deployment: .production)
        }
        #expect(try TrustRootPolicy.replacementPath(EnvironmentReader(production), deployment: .sandbox) == "/sandbox/pki/root.cert.pem")
        #expect(try TrustRootPolicy.replacementPath(EnvironmentReader(["PAYPIPE_APPLEPAY_TRUST_ROOT": " "]), deployment: .production) == nil)
        // The insecure-transport escape hatch does not lift it.
        #expect(throws: ConfigurationError.self) {
            try WorkerConfiguration(stage: .decrypt, environment: EnvironmentReader(production.merging(["PAYPIPE_ALLOW_INSECURE_TRANSPORT": "1"]) { $1 }))
        }
    }

    /// A set-up that tunes only the gateway concurrency keeps the default batch of 50: that variable does not shape it.
    @Test func everyStageBatchesFiftyByDefaultWhateverTheGatewayConcurrency() throws {
        for stage in [Stage.decrypt, .authorize, .submit, .notify] {
            #expect(try WorkerConfiguration(stage: stage, environment: EnvironmentReader(["PAYPIPE_ENV": "sandbox"])).batchSize == 50)
        }
        let tuned = try WorkerConfiguration(stage: .submit, environment: EnvironmentReader(["PAYPIPE_ENV": "sandbox", "PAYPIPE_GATEWAY_CONCURRENCY": "8"]))
        #expect(tuned.batchSize == 50)
    }

    @Test func batchMustFitPrefetch() {
        #expect(throws: ConfigurationError.self) {
            try WorkerConfiguration(stage: .submit, environment: EnvironmentReader(["PAYPIPE_PREFETCH": "10", "PAYPIPE_BATCH_SIZE": "50"]))
        }
    }

    @Test func durations() {
        #expect(DurationParser.seconds("250ms") == 0.25)
        #expect(DurationParser.seconds("2m") == 120)
        #expect(DurationParser.seconds("1.5") == 1.5)
        #expect(DurationParser.seconds("1h") == 3600)
        #expect(DurationParser.seconds("soon") == nil)
        #expect(DurationParser.seconds("5d") == 432_000, "PAYPIPE_WEBHOOK_DISABLE_AFTER's default, as written")
    }

    @Test func decimalNumbers() throws {
        let environment = EnvironmentReader(["RATE": "0.5", "BAD": "fast", "NAN": "nan", "BIG": "20000"])
        #expect(try environment.double("RATE", default: 0, range: 0...10_000) == 0.5)
        #expect(try environment.double("UNSET", default: 0, range: 0...10_000) == 0)
        for name in ["BAD", "NAN", "BIG"] {
            #expect(throws: ConfigurationError.self) { try environment.double(name, default: 0, range: 0...10_000) }
        }
    }
}
