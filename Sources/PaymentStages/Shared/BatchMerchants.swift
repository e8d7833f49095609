import Pipeline
import Postgres

extension MerchantDirectory {
    /// The merchants of one batch, each looked up once, for a stage's `decide`.
    ///
    /// Why not one ``entry(_:on:now:)`` per message: the cache may revalidate against the database per call (every
    /// `ttl`); a batch needs each merchant once. A merchant whose configuration cannot be loaded (bad key material) is
    /// `unavailable` with the error as classified, which fails that merchant's messages alone. A database error aborts
    /// the transaction, so it is rethrown.
    func lookups(_ ids: some Sequence<String>, on connection: PostgresConnection) throws(PostgresError) -> [String: MerchantLookup<Entry>] {
        var lookups: [String: MerchantLookup<Entry>] = [:]
        for id in ids where lookups[id] == nil {
            do {
                lookups[id] = try entry(id, on: connection).map { .found($0) } ?? .unknown
            } catch let error as PostgresError {
                throw error
            } catch {
                lookups[id] = .unavailable(FailureClassifier.classify(error))
            }
        }
        return lookups
    }
}
