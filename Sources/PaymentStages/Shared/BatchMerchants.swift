import Pipeline
import Postgres

extension MerchantDirectory {
    /// The merchants of one batch, each looked up once, for a stage's `decide`.
    ///
    /// Why not one ``entry(_:on:now:)`` per message: the cache may revalidate against the database per call (every
    /// `ttl`); a batch needs each merchant once, and ``entries(_:on:now:)`` reads them in at most two statements. A merchant whose configuration cannot be loaded (bad key material) is
    /// `unavailable` with the error as classified, which fails that merchant's messages alone. A database error aborts
    /// the transaction, so it is rethrown.
    func lookups(_ ids: some Sequence<String>, on connection: PostgresConnection) throws(PostgresError) -> [String: MerchantLookup<Entry>] {
        let ids = Set(ids)
        let found: [String: Result<Entry?, any Error>]
        do {
            found = try entries(ids, on: connection)
        } catch let error as PostgresError {
            throw error
        } catch {
            return Dictionary(uniqueKeysWithValues: ids.map { ($0, .unavailable(FailureClassifier.classify(error))) })
        }
        var lookups: [String: MerchantLookup<Entry>] = [:]
        for (id, result) in found {
            switch result {
            case .success(let entry?): lookups[id] = .found(entry)
            case .success(nil): lookups[id] = .unknown
            case .failure(let error as PostgresError): throw error
            case .failure(let error): lookups[id] = .unavailable(FailureClassifier.classify(error))
            }
        }
        return lookups
    }
}
