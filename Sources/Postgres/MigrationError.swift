/// Why `Migrator` refused to (or could not) bring the schema up to date.
public enum MigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The compiled-in list is inconsistent (duplicate or non-positive version, empty name).
    case invalidMigrations(String)
    /// The bookkeeping table name is not a plain (optionally schema-qualified) identifier.
    case invalidTableName(String)
    /// An applied migration's SQL no longer matches what was applied: someone edited a shipped migration.
    case checksumMismatch(version: Int, name: String)
    /// A migration's SQL failed; its transaction was rolled back and later migrations were not attempted.
    case migrationFailed(version: Int, name: String, reason: String)

    public var description: String {
        switch self {
        case .invalidMigrations(let reason):
            "invalid migration list: \(reason)"
        case .invalidTableName(let name):
            "invalid migrations table name '\(name)': use letters, digits and underscores, optionally schema.table"
        case .checksumMismatch(let version, let name):
            "migration \(version) (\(name)) was changed after it was applied; add a new migration instead of editing it"
        case .migrationFailed(let version, let name, let reason):
            "migration \(version) (\(name)) failed and was rolled back: \(reason)"
        }
    }
}
