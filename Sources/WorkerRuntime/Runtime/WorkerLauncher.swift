import Foundation

/// What every `paypipe-<stage>` executable's `main` does: read configuration, start the runtime,
/// wait for SIGTERM/SIGINT, drain, exit. Keeps the executables a few lines long.
public enum WorkerLauncher {
    /// Runs a worker of `stage` until signalled, declaring `layout`, with its configuration read by `configure` and the
    /// stage side's own `components` for its handler (the reconciler). Exit codes: 0 clean stop, 1 in-flight work did
    /// not drain in time, 78 (EX_CONFIG) invalid configuration, 69 (EX_UNAVAILABLE) could not start, 64 (EX_USAGE) an
    /// argument other than `--help` or `--version`. `variables`: the catalogue its `--help` lists (the stage's entries).
    public static func run<Handler: StageHandler>(
        stage: StageName, layout: BrokerLayout, environment: EnvironmentReader = EnvironmentReader(), registry: MetricsRegistry = MetricsRegistry(),
        variables: [ConfigurationVariable] = RuntimeSettings.all,
        configure: (EnvironmentReader) throws(ConfigurationError) -> WorkerConfiguration,
        components: @escaping @Sendable (Handler) -> @Sendable (WorkerContext) -> [any WorkerComponent] = { _ in { _ in [] } },
        makeHandler: (WorkerConfiguration, Logger) throws -> Handler
    ) -> Never {
        answerArguments(Array(CommandLine.arguments.dropFirst()), stage: stage, variables: variables)
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

    /// What a worker's command line asks before anything starts. A worker takes no arguments: `--help` prints its
    /// variables and `--version` its version (and git commit), each exiting 0; any other argument exits 64 naming it,
    /// before configuration is read or a connection opened. Returns when the worker should go on starting.
    static func answerArguments(_ arguments: [String], stage: StageName, variables: [ConfigurationVariable]) {
        switch WorkerArguments.decide(arguments) {
        case .start:
            return
        case .help:
            print(ConfigurationReference.workerHelp(stage: stage, variables: variables), terminator: "")
            exit(0)
        case .version:
            print(BuildInfo.current.versionLine(program: "paypipe-\(stage.rawValue)"))
            exit(0)
        case .unknown(let argument):
            let message = "paypipe-\(stage.rawValue): unknown argument '\(argument)'; a worker takes none but --help and --version "
                + "(it is configured by environment variables: --help lists them)\n"
            FileHandle.standardError.write(Data(message.utf8))
            exit(64)
        }
    }
}

/// The decision on a worker's arguments, pure for its unit test.
enum WorkerArguments: Equatable {
    case start
    case help
    case version
    case unknown(String)

    /// `--help` wins over `--version` when both are given; anything else is unknown.
    static func decide(_ arguments: [String]) -> WorkerArguments {
        if let unknown = arguments.first(where: { $0 != "--help" && $0 != "--version" }) { return .unknown(unknown) }
        if arguments.contains("--help") { return .help }
        return arguments.contains("--version") ? .version : .start
    }
}
