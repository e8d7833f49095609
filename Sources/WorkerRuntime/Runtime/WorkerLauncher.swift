import Foundation

/// What every `paypipe-<stage>` executable's `main` does: read configuration, start the runtime,
/// wait for SIGTERM/SIGINT, drain, exit. Keeps the executables a few lines long.
public enum WorkerLauncher {
    /// Runs a worker of `stage` until signalled, declaring `layout`, with its configuration read by `configure` and the
    /// stage side's own `components` for its handler (the reconciler). Exit codes: 0 clean stop, 1 in-flight work did
    /// not drain in time, 78 (EX_CONFIG) invalid configuration, 69 (EX_UNAVAILABLE) could not start.
    public static func run<Handler: StageHandler>(
        stage: StageName, layout: BrokerLayout, environment: EnvironmentReader = EnvironmentReader(), registry: MetricsRegistry = MetricsRegistry(),
        configure: (EnvironmentReader) throws(ConfigurationError) -> WorkerConfiguration,
        components: @escaping @Sendable (Handler) -> @Sendable (WorkerContext) -> [any WorkerComponent] = { _ in { _ in [] } },
        makeHandler: (WorkerConfiguration, Logger) throws -> Handler
    ) -> Never {
        answerVersion(Array(CommandLine.arguments.dropFirst()), program: "paypipe-\(stage.rawValue)")
        // Before any configuration (keys) is read: nothing in this process may end up in a core file.
        let hardeningFailures = ProcessHardening.disableCoreDumps()
        let configuration: WorkerConfiguration
        do {
            configuration = try configure(environment)
        } catch {
            Logger(component: stage.rawValue, threshold: .info).error("configuration_invalid", [("error", .string(error.description))])
            exit(78)
        }
        let logger = Logger(component: stage.rawValue, threshold: configuration.logLevel)
            .with([("pid", .int(Int(ProcessInfo.processInfo.processIdentifier)))])
        for failure in hardeningFailures {
            logger.warning("core_dumps_not_disabled", [("error", .string(failure))])
        }
        if configuration.insecureTransportAllowed {
            logger.warning("insecure_transport_allowed", [("variable", .string(ConnectionSecurityPolicy.allowInsecureTransportVariable))])
        }
        let signals = ShutdownSignal()
        let runtime: StageRuntime<Handler>
        do {
            let handler = try makeHandler(configuration, logger)
            runtime = try StageRuntime(
                handler: handler, layout: layout, configuration: configuration, logger: logger, registry: registry,
                hooks: .forWorker(environment: environment), components: components(handler))
            try runtime.start()
        } catch let error as ConfigurationError {
            // Stage settings and secret files (data key, permissions) are configuration too: same event, same exit.
            logger.error("configuration_invalid", [("error", .string(error.description))])
            exit(78)
        } catch {
            logger.error("startup_failed", [("error", .string(String(describing: error)))])
            exit(69)
        }
        signals.wait()
        runtime.requestStop()
        exit(runtime.waitUntilStopped() ? 0 : 1)
    }

    /// `paypipe-<stage> --version`: prints the version (and the git commit) and exits 0, reading no configuration.
    static func answerVersion(_ arguments: [String], program: String) {
        guard arguments.contains("--version") else { return }
        print(BuildInfo.current.versionLine(program: program))
        exit(0)
    }
}
