import Foundation

// `paypipe`: the operator CLI. Each subcommand lives in its own file; this is only the dispatcher.
let commands: [any CLICommand.Type] = [
    MigrateCommand.self,
    HealthcheckCommand.self,
    ReconcileCommand.self,
    TokenCommand.self,
    SandboxCommand.self,
    MerchantCommand.self,
    JobCommand.self,
    PaymentCommand.self,
    CredentialCommand.self,
    StatsCommand.self,
    JWTCommand.self,
    WebhooksCommand.self,
    DLQCommand.self,
]
exit(CLI.dispatch(Array(CommandLine.arguments.dropFirst()), commands: commands))
