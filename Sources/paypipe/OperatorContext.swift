import AMQP
import Foundation
import Pipeline
import Postgres

/// Connections and error reporting shared by the operator commands.
enum OperatorContext {
    /// Outside sandbox the URL must be set and pass ``ConnectionSecurityPolicy``, as for the workers.
    static func database(_ environment: EnvironmentReader = EnvironmentReader()) throws -> PostgresConnection {
        let deployment = try environment.choice("PAYPIPE_ENV", default: DeploymentEnvironment.production)
        let url = try ConnectionSecurityPolicy.databaseURL(environment, deployment: deployment)
        return try PostgresConnection(configuration: try PostgresConfiguration(url: url))
    }

    static func publisher(_ configuration: WorkerConfiguration) throws -> AMQPPublisher {
        var amqp = try AMQPConfiguration(url: configuration.amqpURL)
        amqp.connectionName = "paypipe-cli"
        let publisher = AMQPPublisher(configuration: amqp, topology: PipelineTopology.topology(retrySchedule: configuration.retrySchedule, brokerNodes: amqp.nodes.count))
        return publisher
    }

    static func dataKeyring(_ environment: EnvironmentReader = EnvironmentReader()) throws -> DataKeyring {
        try DataKeyring.load(environment, deployment: try environment.choice("PAYPIPE_ENV", default: DeploymentEnvironment.production))
    }

    /// Where `paypipe sandbox init` and sample jobs keep the sandbox PKI by default.
    static var sandboxDirectory: String {
        EnvironmentReader().string(PaymentSettings.sandboxDirectory.variable.name, default: PaymentSettings.sandboxDirectory.defaultValue)
    }

    /// Prints an error on stderr and maps it to an exit code.
    static func report(_ error: any Error) -> Int32 {
        printError("paypipe: \(error)")
        switch error {
        case is ConfigurationError: return ExitCode.configuration
        case is CommandArguments.UsageError: return ExitCode.usage
        case let postgres as PostgresError where postgres.isConnectionProblem: return ExitCode.unavailable
        case is AMQPError: return ExitCode.unavailable
        default: return ExitCode.failure
        }
    }
}
