import Pipeline
import Postgres

/// `paypipe migrate`: applies the compiled-in schema migrations (idempotent, under an advisory lock).
enum MigrateCommand: CLICommand {
    static let name = "migrate"
    static let summary = "apply database migrations (idempotent)"
    static let usage = """
        usage: paypipe migrate [--status [--json]]
          Applies PayPipe's schema migrations to PAYPIPE_DATABASE_URL under an advisory lock, so several
          containers may run it at once. Prints the versions applied; exits 0 when the schema is current.
          --status   list migrations and when each was applied, change nothing
          --json     with --status: one JSON object per migration ({"version","name","applied_at"})
        """

    /// `migrate status` (a word) is the same as `--status`.
    static let syntax = CommandSyntax(.init(flags: ["--status", "--json"]), .init(["status"], flags: ["--json"]))

    static func run(_ arguments: CommandArguments) -> Int32 {
        do {
            let connection = try OperatorContext.database()
            defer { connection.close() }
            let migrator = Migrator(migrations: PayPipeSchema.migrations, lockKey: PayPipeSchema.migrationLockKey)
            if arguments.flag("--status") || arguments.positionals.first == "status" {
                let rows = try migrator.status(on: connection).map { entry in
                    [String(entry.version), entry.name, entry.appliedAt.map(Logger.timestamp) ?? "pending"]
                }
                let table = TextTable(header: ["VERSION", "NAME", "APPLIED AT"], rows: rows, alignments: [.right])
                print(arguments.flag("--json") ? table.jsonLines() : table.rendered())
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
