import Postgres

/// The merchants of one batch, each looked up once, for the set-based fast paths.
///
/// Why not just ``MerchantDirectory``: its cache may revalidate against the database per call (every `ttl`), once
/// per message; a batch needs each merchant once. And the fast paths must not fail a whole batch for one merchant
/// whose configuration cannot be loaded (bad key material): that merchant counts as absent here, which leaves its
/// messages to the one-by-one path, where the error is reported against them as before. A database error, though,
/// aborts the transaction, so it is rethrown (the batch then runs one by one in a new transaction).
struct BatchMerchants {
    private let directory: MerchantDirectory
    private var entries: [String: MerchantDirectory.Entry?] = [:]

    init(_ directory: MerchantDirectory) {
        self.directory = directory
    }

    /// The merchant's entry; `nil` when it does not exist or cannot be loaded.
    mutating func entry(_ id: String, on connection: PostgresConnection) throws(PostgresError) -> MerchantDirectory.Entry? {
        if let known = entries[id] { return known }
        let entry: MerchantDirectory.Entry?
        do {
            entry = try directory.entry(id, on: connection)
        } catch let error as PostgresError {
            throw error
        } catch {
            entry = nil
        }
        entries[id] = .some(entry)
        return entry
    }
}
