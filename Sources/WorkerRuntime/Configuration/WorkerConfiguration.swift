import Foundation

/// Everything a stage worker reads from its environment, through the declarations of ``RuntimeSettings`` (whose
/// defaults docs/configuration.md shows). Parsing is pure: give it any dictionary.
public struct WorkerConfiguration: Sendable {
    /// `PAYPIPE_AMQP_URL`, with `PAYPIPE_AMQP_PASSWORD_FILE`'s password written in if that is set (``PasswordFiles``).
    public var amqpURL: String
    /// `PAYPIPE_DATABASE_URL`, with `PAYPIPE_DATABASE_PASSWORD_FILE`'s password added if that is set.
    public var databaseURL: String
    public var environment: DeploymentEnvironment
    public var logLevel: LogLevel
    /// Unacknowledged deliveries the broker may push to this worker (`basic.qos`).
    public var prefetch: UInt16
    /// Parallel handler lanes, each with its own database connection.
    public var concurrency: Int
    /// Deliveries a lane handles in one database transaction and one confirm window.
    public var batchSize: Int
    /// How long a busy lane waits for its batch to fill (``BatchFill``); 0 never waits.
    public var batchLingerSeconds: Double
    public var heartbeatSeconds: Int
    /// Port of `/healthz` and `/metrics`; 0 picks a free port (tests).
    public var metricsPort: UInt16
    public var metricsHost: String
    /// Messages larger than this are dead-lettered unread (`message_too_large`).
    public var maxMessageBytes: Int
    public var retrySchedule: RetrySchedule
    /// How long SIGTERM waits for in-flight work before giving up (deliveries then return to the queue).
    public var shutdownTimeoutSeconds: Double
    /// The stage side's reconciler re-drives work (payments) that sat in a non-terminal stage longer than this.
    public var stuckAfterSeconds: Double
    /// How often the reconciler looks; 0 disables it in this process.
    public var reconcileIntervalSeconds: Double
    /// `/livez` fails once a lane has made no progress for longer than this (``LivenessPolicy``): longer than any
    /// batch may legitimately take (its calls' timeouts, plus the 30 s confirm wait of its hand-offs).
    public var laneStuckAfterSeconds: Double
    /// `PAYPIPE_ALLOW_INSECURE_TRANSPORT=1` outside sandbox: plain transport to remote hosts was allowed
    /// (``ConnectionSecurityPolicy`` rule 4), which the launcher logs as a warning.
    public var insecureTransportAllowed: Bool
    /// `PAYPIPE_OTLP_ENDPOINT` and its companions: where spans are exported; nil (the default) exports none. An empty service name stands for the
    /// worker's own (`paypipe-<stage>`), filled in by the runtime.
    public var otlp: OTLPSettings?

    /// Sandbox defaults only: outside sandbox both URLs must be set (``ConnectionSecurityPolicy``).
    public static let defaultAMQPURL = "amqp://guest:guest@127.0.0.1:5672/%2f"
    public static let defaultDatabaseURL = "postgresql://postgres@127.0.0.1:5432/paypipe"

    /// Deliveries per transaction for every stage (`PAYPIPE_BATCH_SIZE`). Submit keeps it too, although a batch's
    /// AUTHs may then outnumber its call threads: a round's statements are amortised over the batch (a batch of 16
    /// cost 12% of the end-to-end throughput in `scripts/bench`), and an AUTH that waits for a thread longer than the
    /// send window is refused before it is sent and re-planned, never sent late.
    public static let defaultBatchSize = 50

    /// `PAYPIPE_BATCH_LINGER`: a busy lane waits this long at most for a fuller batch (``BatchFill``): on two
    /// saturated cores 10 ms gave the 1x layout larger batches and a higher sustained rate
    /// (bench/results/performance-history.md, set Q). A lane that keeps up with its input never waits.
    public static let defaultBatchLinger = 0.010

    /// `PAYPIPE_LANE_STUCK_AFTER`: 5 minutes is more than twice the longest batch the default timeouts allow (submit:
    /// `PAYPIPE_SEND_WINDOW` 5 s + `PAYPIPE_WEBSERVICES_TIMEOUT` 60 s for a call, then up to 30 s of confirm wait per
    /// publish attempt), so a slow processor never gets a worker restarted; a lane blocked for good is noticed.
    public static let defaultLaneStuckAfter = 300.0

    /// `defaultMetricsPort`: `PAYPIPE_METRICS_PORT` when unset (each stage has its own, so several workers can share
    /// one host without configuration). The payment side's `init(stage:environment:)` adds its own checks.
    public init(defaultMetricsPort: UInt16, environment reader: EnvironmentReader = EnvironmentReader()) throws(ConfigurationError) {
        typealias S = RuntimeSettings
        environment = try reader.read(S.deployment)
        amqpURL = try PasswordFiles.amqpURL(try reader.read(S.amqpURL), reader, deployment: environment)
        databaseURL = try PasswordFiles.databaseURL(try reader.read(S.databaseURL), reader, deployment: environment)
        logLevel = try reader.read(S.logLevel)
        prefetch = try reader.read(S.prefetch)
        concurrency = try reader.read(S.concurrency)
        batchSize = try reader.read(S.batchSize)
        batchLingerSeconds = try reader.read(S.batchLinger)
        heartbeatSeconds = try reader.read(S.heartbeatSeconds)
        metricsPort = try reader.read(S.metricsPort, default: defaultMetricsPort)
        metricsHost = try reader.read(S.metricsHost)
        maxMessageBytes = try reader.read(S.maxMessageBytes)
        let maxRetries = try reader.read(S.maxRetries)
        if let text = try reader.raw(S.retryDelays) {
            guard let delays = RetrySchedule.parseDelays(text) else {
                throw ConfigurationError(variable: S.retryDelays.name, problem: "expected comma-separated positive durations such as 1s,5s,30s, got '\(text)'")
            }
            retrySchedule = RetrySchedule(delays: delays, maxRetries: maxRetries)
        } else {
            retrySchedule = RetrySchedule(delays: RetrySchedule.standard.delays, maxRetries: maxRetries)
        }
        shutdownTimeoutSeconds = try reader.read(S.shutdownTimeout)
        stuckAfterSeconds = try reader.read(S.stuckAfter)
        reconcileIntervalSeconds = try reader.read(S.reconcileInterval)
        laneStuckAfterSeconds = try reader.read(S.laneStuckAfter)
        guard prefetch >= UInt16(batchSize) || batchSize == 1 else {
            throw ConfigurationError(variable: "PAYPIPE_BATCH_SIZE", problem: "must not exceed PAYPIPE_PREFETCH (\(prefetch)), or batches can never fill")
        }
        try Self.validateURL(amqpURL, variable: "PAYPIPE_AMQP_URL", schemes: ["amqp", "amqps"])
        try Self.validateURL(databaseURL, variable: "PAYPIPE_DATABASE_URL", schemes: ["postgresql", "postgres"])
        insecureTransportAllowed = try ConnectionSecurityPolicy.enforce(reader, deployment: environment)
        otlp = try Self.otlpSettings(reader)
    }

    private static func otlpSettings(_ reader: EnvironmentReader) throws(ConfigurationError) -> OTLPSettings? {
        typealias S = RuntimeSettings
        guard let endpoint = try reader.raw(S.otlpEndpoint), !endpoint.isEmpty else { return nil }
        try validateURL(endpoint, variable: S.otlpEndpoint.name, schemes: ["http", "https"])
        return OTLPSettings(endpoint: endpoint, serviceName: try reader.read(S.otlpServiceName), batchSize: try reader.read(S.otlpBatchSize),
                            queueSize: try reader.read(S.otlpQueueSize), timeoutSeconds: try reader.read(S.otlpTimeout),
                            intervalSeconds: try reader.read(S.otlpInterval))
    }

    /// Cheap early check so a typo fails at start-up with the variable's name; the client modules parse fully.
    private static func validateURL(_ url: String, variable: String, schemes: [String]) throws(ConfigurationError) {
        guard let scheme = url.split(separator: ":", maxSplits: 1).first.map({ $0.lowercased() }),
              schemes.contains(scheme), url.contains("://") else {
            throw ConfigurationError(variable: variable, problem: "expected a \(schemes.joined(separator: "/"))://… URL")
        }
    }
}
