import Foundation

/// One versioned schema change, compiled into the program so that code and schema ship together.
///
/// `sql` may hold several statements; it runs in one transaction with the bookkeeping insert, so a migration
/// is applied entirely or not at all (statements that refuse to run in a transaction, such as
/// `CREATE INDEX CONCURRENTLY`, are therefore not supported). Once applied, a migration must never change:
/// `Migrator` compares checksums and refuses to continue if one did.
public struct Migration: Sendable, Equatable {
    public let version: Int
    public let name: String
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

/// Applies versioned migrations compiled into the code.
///
/// Every worker may call `apply` at start-up: a session-level `pg_advisory_lock` serialises concurrent callers,
/// so each migration runs exactly once, and callers that waited find nothing left to do. Each migration runs in
/// its own transaction together with its row in the bookkeeping table (version, name, SHA-256 checksum of the
/// SQL, applied_at). Before applying anything, the checksums of already-applied migrations are compared with the
/// code; a mismatch stops everything, since the database no longer matches what the code believes.
///
/// Versions recorded in the table but unknown to the code (a newer release migrated already) are tolerated so
/// that an older worker can keep running during a rolling deploy; `status` lists them.
public struct Migrator: Sendable {
    /// "PAYPIPE1" in ASCII: the advisory lock key shared by every PayPipe process.
    public static let defaultLockKey: Int64 = 0x5041_5950_4950_4531

    public let migrations: [Migration]
    public let lockKey: Int64
    public let tableName: String

    public init(migrations: [Migration], lockKey: Int64 = Migrator.defaultLockKey,
                tableName: String = "schema_migrations")
    {
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.lockKey = lockKey
        self.tableName = tableName
    }

    /// Applies the pending migrations in version order and returns their versions (empty when up to date).
    /// The connection must not be inside a transaction.
    public func apply(on connection: PostgresConnection) throws -> [Int] {
        try validate()
        let table = try quotedTableName()
        try connection.query("SELECT pg_advisory_lock($1)", [lockKey])
        defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [lockKey]) }
        try connection.simpleQuery("""
            CREATE TABLE IF NOT EXISTS \(table) (
                version bigint PRIMARY KEY,
                name text NOT NULL,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let applied = try appliedMigrations(in: table, on: connection)
        var pending: [(migration: Migration, checksum: String)] = []
        for migration in migrations {
            let checksum = try Self.checksum(of: migration.sql, on: connection)
            if let record = applied[migration.version] {
                guard record.checksum == checksum else {
                    throw MigrationError.checksumMismatch(version: migration.version, name: migration.name)
                }
            } else {
                pending.append((migration, checksum))
            }
        }
        for (migration, checksum) in pending {
            do {
                try connection.transaction { connection in
                    try connection.simpleQuery(migration.sql)
                    try connection.query(
                        "INSERT INTO \(table) (version, name, checksum) VALUES ($1, $2, $3)",
                        [migration.version, migration.name, checksum])
                }
            } catch let error as PostgresError where !error.isConnectionProblem {
                throw MigrationError.migrationFailed(version: migration.version, name: migration.name,
                                                     reason: error.description)
            }
        }
        return pending.map(\.migration.version)
    }

    /// Every known migration with its application time (nil while pending), plus versions recorded in the
    /// table that the code does not know, in version order.
    public func status(on connection: PostgresConnection) throws -> [(version: Int, name: String, appliedAt: Date?)] {
        let table = try quotedTableName()
        let exists = try connection.query("SELECT to_regclass($1) IS NOT NULL AS present", [table])
        let applied = try exists.first?.decode("present", as: Bool.self) == true
            ? appliedMigrations(in: table, on: connection) : [:]
        var entries = migrations.map { (version: $0.version, name: $0.name, appliedAt: applied[$0.version]?.appliedAt) }
        let known = Set(migrations.map(\.version))
        for (version, record) in applied where !known.contains(version) {
            entries.append((version, record.name, record.appliedAt))
        }
        return entries.sorted { $0.version < $1.version }
    }

    private struct AppliedMigration {
        let name: String
        let checksum: String
        let appliedAt: Date
    }

    private func appliedMigrations(in table: String, on connection: PostgresConnection) throws -> [Int: AppliedMigration] {
        var applied: [Int: AppliedMigration] = [:]
        for row in try connection.query("SELECT version, name, checksum, applied_at FROM \(table)") {
            applied[try row.decode("version")] = AppliedMigration(
                name: try row.decode("name"), checksum: try row.decode("checksum"),
                appliedAt: try row.decode("applied_at"))
        }
        return applied
    }

    /// SHA-256 of the SQL's UTF-8 bytes, computed by the server (this module has no hashing of its own).
    private static func checksum(of sql: String, on connection: PostgresConnection) throws -> String {
        let rows = try connection.query("SELECT encode(sha256(convert_to($1::text, 'UTF8')), 'hex') AS checksum", [sql])
        return try rows[0].decode("checksum")
    }

    private func validate() throws {
        var seen: Set<Int> = []
        for migration in migrations {
            guard migration.version > 0 else {
                throw MigrationError.invalidMigrations("version \(migration.version) is not positive")
            }
            guard seen.insert(migration.version).inserted else {
                throw MigrationError.invalidMigrations("version \(migration.version) appears more than once")
            }
            guard !migration.name.isEmpty else {
                throw MigrationError.invalidMigrations("version \(migration.version) has an empty name")
            }
        }
    }

    /// The table name is SQL text, not a parameter, so it is restricted to plain identifiers and quoted.
    private func quotedTableName() throws -> String {
        let parts = tableName.split(separator: ".", omittingEmptySubsequences: false)
        let isIdentifier: (Substring) -> Bool = { part in
            guard let first = part.first, first == "_" || (first.isASCII && first.isLetter) else { return false }
            return part.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) } && part.utf8.count <= 63
        }
        guard (1...2).contains(parts.count), parts.allSatisfy(isIdentifier) else {
            throw MigrationError.invalidTableName(tableName)
        }
        return parts.map { "\"\($0)\"" }.joined(separator: ".")
    }
}

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
