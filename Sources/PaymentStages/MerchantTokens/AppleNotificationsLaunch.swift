import Foundation
import Pipeline

/// What `paypipe-apple-notifications`' main does: read its configuration, serve the endpoint and `/healthz`,
/// `/livez`, `/readyz`, `/metrics`, stop on SIGTERM/SIGINT. Exit codes as every worker's: 0 stopped, 64 an argument
/// other than `--help`/`--version`, 69 could not start, 78 invalid configuration.
public enum AppleNotificationsLaunch {
    public static func run(environment: EnvironmentReader = EnvironmentReader()) -> Never {
        let name = MerchantTokenSettings.notificationsName
        let program = "paypipe-\(name.rawValue)"
        switch Array(CommandLine.arguments.dropFirst()) {
        case []: break
        case ["--help"]:
            print(help(variables: ConfigurationCatalogue.production.filter { $0.isRead(by: name) }), terminator: "")
            exit(0)
        case ["--version"]:
            print(BuildInfo.current.versionLine(program: program))
            exit(0)
        case let arguments:
            FileHandle.standardError.write(Data("\(program): unknown argument '\(arguments[0])'; it takes none but --help and --version\n".utf8))
            exit(64)
        }
        _ = ProcessHardening.disableCoreDumps()
        let configuration: WorkerConfiguration
        let settings: AppleNotificationService.Settings
        do {
            configuration = try WorkerConfiguration(defaultMetricsPort: MerchantTokenSettings.notificationsMetricsPort, environment: environment)
            settings = try Self.settings(environment, databaseURL: configuration.databaseURL)
        } catch {
            Logger(component: name.rawValue, threshold: .info).error("configuration_invalid", [("error", .string(error.description))])
            exit(78)
        }
        let logger = Logger(component: name.rawValue, threshold: configuration.logLevel)
            .with([("pid", .int(Int(ProcessInfo.processInfo.processIdentifier)))])
        // Created before any server thread: they inherit the blocked SIGTERM/SIGINT, so only `wait()` receives them.
        let signals = ShutdownSignal()
        let registry = MetricsRegistry()
        BuildInfo.current.register(in: registry)
        let service = AppleNotificationService(settings: settings, logger: logger, registry: registry)
        let observability: ObservabilityServer
        do {
            try service.start()
            observability = try ObservabilityServer(
                host: configuration.metricsHost, port: configuration.metricsPort, registry: registry,
                health: { HealthReport(checks: ["database": service.databaseReachable()]) },
                liveness: { HealthReport(checks: ["server": service.boundPort != 0]) },
                readiness: { HealthReport(checks: ["database": service.databaseReachable()]) })
        } catch {
            logger.error("startup_failed", [("error", .string(String(describing: error)))])
            exit(69)
        }
        logger.info("notifications_listening", [("port", .int(Int(service.boundPort))), ("metricsPort", .int(Int(observability.port)))])
        signals.wait()
        logger.info("stopping")
        observability.stop()
        service.stop()
        exit(0)
    }

    /// The endpoint's own settings, with the database the runtime's `PAYPIPE_DATABASE_URL` names.
    public static func settings(_ environment: EnvironmentReader, databaseURL: String) throws(ConfigurationError) -> AppleNotificationService.Settings {
        typealias S = MerchantTokenSettings
        let sourcesText = try environment.read(S.notificationsAllowedNetworks)
        guard let sources = NotificationSourcePolicy.parse(sourcesText) else {
            throw ConfigurationError(variable: S.notificationsAllowedNetworks.variable.name,
                                     problem: "expected comma-separated CIDR networks (17.58.0.0/18) or any, got '\(sourcesText)'")
        }
        return AppleNotificationService.Settings(
            host: try environment.read(S.notificationsHost), port: try environment.read(S.notificationsPort),
            threads: try environment.read(S.notificationsThreads), sources: sources, databaseURL: databaseURL)
    }

    static func help(variables: [ConfigurationVariable]) -> String {
        var text = """
            Usage: paypipe-apple-notifications [--help | --version]
            Answers Apple's merchant-token notifications (GET [/<merchantId>]/notification/merchantToken/<eventId>) with 200
            once the event id is queued in PostgreSQL, 500 when it cannot be (docs/merchant-tokens.md), until SIGTERM.
            Configured by these environment variables and the runtime's PAYPIPE_DATABASE_URL, PAYPIPE_LOG_LEVEL,
            PAYPIPE_METRICS_PORT, PAYPIPE_METRICS_HOST (docs/configuration.md). Exit codes: 0 stopped, 64 usage,
            69 could not start, 78 invalid configuration.

            """
        for variable in variables {
            text += "\n  \(variable.name)\n      \(variable.format.replacingOccurrences(of: "`", with: "")); default \(variable.defaultText.replacingOccurrences(of: "`", with: ""))\n"
            text += "      \(variable.meaning.replacingOccurrences(of: "`", with: ""))\n"
        }
        return text
    }
}
