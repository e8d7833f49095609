import Pipeline
import Postgres

/// `paypipe migrate`: applies the compiled-in schema migrations (idempotent, under an advisory lock).
enum MigrateCommand: CLICommand {
    static let name = "migrate"
    static let summary = "apply database migrations (idempotent)"
    static let usage = """
        usage: paypipe migrate [--status]
          Applies PayPipe's schema migrations to PAYPIPE_DATABASE_URL under an advisory lock, so several
          containers may run it at once. Prints the versions applied; exits 0 when the schema is current.
          --status   list migrations and when each was applied, change nothing
        """

    static func run(arguments raw: [String]) -> Int32 {
        guard let arguments = CLI.parse(raw, usage: usage) else { return ExitCode.usage }
        do {
            let connection = try OperatorContext.database()
            defer { connection.close() }
            let migrator = Migrator(migrations: PayPipeSchema.migrations, lockKey: PayPipeSchema.migrationLockKey)
            if arguments.flag("--status") || arguments.positionals.contains("status") {
                for entry in try migrator.status(on: connection) {
                    print("\(entry.version)\t\(entry.name)\t\(entry.appliedAt.map { "\($0)" } ?? "pending")")
                }
                return ExitCode.ok
            }
            let applied = try migrator.apply(on: connection)
            print("{\"applied\":[\(applied.map(String.init).joined(separator: ","))],\"current\":\(PayPipeSchema.migrations.last?.version ?? 0)}")
            return ExitCode.ok
        } catch {
            return OperatorContext.report(error)
        }
    }
}
