/// The runtime's variables: what every worker reads through ``WorkerConfiguration`` (the operator CLI reads the
/// connection ones too). The payment side adds its own declarations and assembles the catalogue docs/configuration.md
/// is generated from. Adding a variable: declare it here (or beside its reader), read it with `reader.read(…)`, add it
/// to `all`, regenerate the page.
public enum RuntimeSettings {
    static let workersAndCLI: [ConfigurationReader] = [.everyWorker, .cli]

    public static let amqpURL = TextSetting(
        "PAYPIPE_AMQP_URL", readers: workersAndCLI, default: WorkerConfiguration.defaultAMQPURL,
        defaultText: "sandbox only: `\(WorkerConfiguration.defaultAMQPURL)`; required outside sandbox",
        format: "`amqp://` or `amqps://` URL; a cluster: comma-separated URLs, one per node",
        "the broker; `amqps://…?cacertfile=…` for TLS; a cluster as a comma-separated list of node URLs (docs/scaling.md). Outside sandbox: not `guest`, a password, and verified TLS to a non-loopback host (docs/security.md)")
    public static let databaseURL = TextSetting(
        "PAYPIPE_DATABASE_URL", readers: workersAndCLI, default: WorkerConfiguration.defaultDatabaseURL,
        defaultText: "sandbox only: `\(WorkerConfiguration.defaultDatabaseURL)`; required outside sandbox",
        format: "`postgresql://` URL (libpq)",
        "the database, parsed by libpq; `?sslmode=verify-full&sslrootcert=…` for TLS; several hosts with `target_session_attrs=read-write` for failover (docs/scaling.md). Outside sandbox: a user, a credential (or `PGPASSWORD`/`PGPASSFILE`), and `sslmode=verify-full` to a non-loopback host")
    public static let deployment = ChoiceSetting(
        "PAYPIPE_ENV", readers: workersAndCLI, default: DeploymentEnvironment.production,
        "`sandbox` relaxes the connection policy and secret-file checks, and allows the default URLs, a test trust root and private webhook targets; never in production")
    public static let logLevel = ChoiceSetting(
        "PAYPIPE_LOG_LEVEL", readers: [.everyWorker], default: LogLevel.info, "the least severe log line written (JSON lines on stdout)")
    public static let prefetch = IntegerSetting<UInt16>(
        "PAYPIPE_PREFETCH", readers: [.everyWorker], default: 100, range: 1...5000,
        "unacknowledged deliveries the broker may push to one worker (`basic.qos`); at least `PAYPIPE_BATCH_SIZE`")
    public static let concurrency = IntegerSetting<Int>(
        "PAYPIPE_CONCURRENCY", readers: [.everyWorker], default: 2, range: 1...64,
        "parallel handler lanes per worker, each with its own database connection")
    public static let batchSize = IntegerSetting<Int>(
        "PAYPIPE_BATCH_SIZE", readers: [.everyWorker], default: WorkerConfiguration.defaultBatchSize, range: 1...1000,
        "deliveries a lane handles in one database transaction and one confirm window (≤ `PAYPIPE_PREFETCH`); docs/submit.md for submit")
    public static let batchLinger = DurationSetting(
        "PAYPIPE_BATCH_LINGER", readers: [.everyWorker], default: WorkerConfiguration.defaultBatchLinger, range: 0...1,
        "how long a lane that found at least half a batch already waiting, or a lane's first batch after it starts, may wait for the rest (0 never waits; a lane that keeps up never waits); docs/performance.md")
    public static let heartbeatSeconds = IntegerSetting<Int>(
        "PAYPIPE_HEARTBEAT_SECONDS", readers: [.everyWorker], default: 10, range: 2...600, "AMQP heartbeat interval in seconds")
    /// The default is the stage's own port; the runtime takes it from the payment side (`defaultMetricsPort`).
    public static let metricsPort = IntegerSetting<UInt16>(
        "PAYPIPE_METRICS_PORT", readers: [.everyWorker], default: 9100, range: 0...65535,
        defaultText: "the worker's own: decrypt 9101, authorize 9102, submit 9103, notify 9104, operations 9105, apple-notifications 9106 (the CLI: 9100)",
        "port of `/healthz`, `/livez`, `/readyz` and `/metrics`; 0 picks a free port")
    public static let metricsHost = TextSetting(
        "PAYPIPE_METRICS_HOST", readers: [.everyWorker], default: "0.0.0.0", format: "IP address",
        "address the health and metrics server binds")
    public static let maxMessageBytes = IntegerSetting<Int>(
        "PAYPIPE_MAX_MESSAGE_BYTES", readers: [.everyWorker], default: 262_144, range: 1024...16_777_216,
        "larger messages are dead-lettered unread (`message_too_large`)")
    public static let maxRetries = IntegerSetting<Int>(
        "PAYPIPE_MAX_RETRIES", readers: [.everyWorker], default: RetrySchedule.standard.maxRetries, range: 0...100,
        "retries of a transient failure before `retries_exhausted` (dead-lettered); the last delay tier repeats")
    public static let retryDelays = ConfigurationVariable(
        "PAYPIPE_RETRY_DELAYS", readers: [.everyWorker],
        default: "`" + RetrySchedule.standard.delays.map(DurationParser.text).joined(separator: ",") + "` (paypipe-notify: `5s,5m,30m,2h,5h,10h`)",
        format: "comma-separated durations",
        "the delay tiers of retried messages (one retry queue per tier)")
    public static let shutdownTimeout = DurationSetting(
        "PAYPIPE_SHUTDOWN_TIMEOUT", readers: [.everyWorker], default: 30, range: 1...3600,
        "how long SIGTERM waits for in-flight work; what is left returns to the queue")
    public static let stuckAfter = DurationSetting(
        "PAYPIPE_STUCK_AFTER", readers: workersAndCLI, default: 300, range: 1...86_400,
        "the reconciler re-drives payments idle this long in a non-terminal stage (also `paypipe reconcile`'s `--stuck-after` default)")
    public static let reconcileInterval = DurationSetting(
        "PAYPIPE_RECONCILE_INTERVAL", readers: [.everyWorker], default: 60, range: 0...86_400,
        "how often a worker's reconciler and upkeep run; 0 disables them in this process")
    public static let laneStuckAfter = DurationSetting(
        "PAYPIPE_LANE_STUCK_AFTER", readers: [.everyWorker], default: WorkerConfiguration.defaultLaneStuckAfter, range: 1...86_400,
        "`/livez` answers 503 when a lane has made no progress for this long (a lane blocked inside one call); outages of the broker or database never fail it (docs/operations.md, \"Probes\")")
    public static let amqpPasswordFile = ConfigurationVariable(
        PasswordFiles.amqpVariable, readers: workersAndCLI, default: "unset", format: "path of a file (mode 0600/0400 outside sandbox)",
        "the broker password, written into every URL of `PAYPIPE_AMQP_URL` (which then names the user only); for Kubernetes Secrets and Docker secrets (docs/security.md)")
    public static let databasePasswordFile = ConfigurationVariable(
        PasswordFiles.databaseVariable, readers: workersAndCLI, default: "unset", format: "path of a file (mode 0600/0400 outside sandbox)",
        "the database password, added to `PAYPIPE_DATABASE_URL` as libpq's `password` (the URL then carries none) (docs/security.md)")
    public static let allowInsecureTransport = FlagSetting(
        ConnectionSecurityPolicy.allowInsecureTransportVariable, readers: workersAndCLI, default: false,
        "outside sandbox, allow plain `amqp://` and `sslmode` below `verify-full` to non-loopback hosts (service-mesh mutual TLS only); logged as `insecure_transport_allowed` at start-up")
    public static let benchSlowdown = ConfigurationVariable(
        RuntimeHooks.benchSlowdownVariable, readers: [.everyWorker], default: "unset", format: "number > 1",
        "debug builds only: every batch costs this factor more CPU (`scripts/bench --inject-slowdown`); release builds ignore it")

    public static let otlpEndpoint = ConfigurationVariable(
        "PAYPIPE_OTLP_ENDPOINT", readers: [.everyWorker], default: "unset (no spans exported)", format: "`http://` or `https://` URL",
        "the OpenTelemetry collector's OTLP/HTTP base URL: each stage's spans are POSTed as OTLP JSON to `<endpoint>/v1/traces`, in batches, from a background thread; a collector that is down loses spans, never payments (docs/observability.md)")
    public static let otlpServiceName = TextSetting(
        "PAYPIPE_OTLP_SERVICE_NAME", readers: [.everyWorker], default: "", defaultText: "`paypipe-<stage>`", format: "text",
        "the `service.name` resource attribute of the exported spans")
    public static let otlpBatchSize = IntegerSetting<Int>(
        "PAYPIPE_OTLP_BATCH_SIZE", readers: [.everyWorker], default: 256, range: 1...10_000, "spans per OTLP export request")
    public static let otlpQueueSize = IntegerSetting<Int>(
        "PAYPIPE_OTLP_QUEUE_SIZE", readers: [.everyWorker], default: 4096, range: 1...1_000_000,
        "spans waiting for export at most; more are dropped and counted (`paypipe_spans_dropped_total{reason=\"queue_full\"}`)")
    public static let otlpTimeout = DurationSetting(
        "PAYPIPE_OTLP_TIMEOUT", readers: [.everyWorker], default: 5, range: 0.1...60,
        "one export request's time limit; its spans are dropped when it fails (`reason=\"export_failed\"`)")
    public static let otlpInterval = DurationSetting(
        "PAYPIPE_OTLP_INTERVAL", readers: [.everyWorker], default: 1, range: 0.01...60,
        "how long a span waits at most for its export batch to fill")

    public static let all: [ConfigurationVariable] = [
        amqpURL.variable, databaseURL.variable, deployment.variable, logLevel.variable, prefetch.variable, concurrency.variable,
        batchSize.variable, batchLinger.variable, heartbeatSeconds.variable, metricsPort.variable, metricsHost.variable,
        maxMessageBytes.variable, maxRetries.variable, retryDelays, shutdownTimeout.variable, stuckAfter.variable,
        reconcileInterval.variable, laneStuckAfter.variable, amqpPasswordFile, databasePasswordFile, allowInsecureTransport.variable,
        benchSlowdown, otlpEndpoint, otlpServiceName.variable, otlpBatchSize.variable, otlpQueueSize.variable, otlpTimeout.variable,
        otlpInterval.variable,
    ]
}
