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
