import ApplePay
import Foundation
import Pipeline
import Postgres
import Synchronization

/// A merchant as workers see it: configuration plus decrypted secrets (``MerchantStore`` loads it, and only reads it
/// back as this value).
public struct Merchant: Sendable {
    public let id: String
    public let appleMerchantIdentifier: String?
    public let config: MerchantConfig
    public let secrets: MerchantSecrets
    public let updatedAt: Date
}

/// Workers' cache of merchants and their parsed Apple Pay keyrings.
///
/// Parsing certificates and private keys per message would dominate decryption cost, so a merchant is
/// parsed once per configuration version. Entries are revalidated against `merchants.updated_at` at most
/// every `ttl` seconds, which is how workers pick up `paypipe merchant apply` without a restart.
public final class MerchantDirectory: Sendable {
    public struct Entry: Sendable {
        public let merchant: Merchant
        public let keyring: MerchantKeyring
        let checkedAt: Date
    }

    private let store: MerchantStore
    private let ttl: Double
    private let entries = Mutex<[String: Entry]>([:])

    public init(store: MerchantStore, ttl: Double = 5) {
        self.store = store
        self.ttl = ttl
    }

    /// The merchant's current entry, or `nil` if no such merchant exists.
    public func entry(_ id: String, on connection: PostgresConnection, now: Date = Date()) throws -> Entry? {
        try entries([id], on: connection, now: now)[id]!.get()
    }

    /// The current entries of `ids` (`nil`: no such merchant), in at most two statements however many merchants: one
    /// revalidates the cached entries older than `ttl` against `updated_at`, one loads the others and those that
    /// changed. Why not a statement per merchant: outside a transaction each one is a commit of its own, and a batch
    /// naming several merchants would pay one per merchant every `ttl`. A database error is thrown (it aborts the
    /// caller's transaction); a merchant whose configuration or keys cannot be read fails alone.
    public func entries(_ ids: some Sequence<String>, on connection: PostgresConnection, now: Date = Date()) throws
        -> [String: Result<Entry?, any Error>] {
        let wanted = Set(ids)
        let cached = entries.withLock { cache in wanted.compactMap { id in cache[id].map { (id, $0) } } }
        var found: [String: Result<Entry?, any Error>] = [:]
        var stale: [String: Entry] = [:]
        for (id, entry) in cached {
            if now.timeIntervalSince(entry.checkedAt) < ttl { found[id] = .success(entry) } else { stale[id] = entry }
        }
        if !stale.isEmpty {
            let current = try store.updatedAt(stale.keys.sorted(), on: connection)
            for (id, entry) in stale where current[id] == entry.merchant.updatedAt {
                found[id] = .success(Entry(merchant: entry.merchant, keyring: entry.keyring, checkedAt: now))
            }
        }
        let missing = wanted.subtracting(found.keys)
        if !missing.isEmpty {
            let loaded = try store.load(missing.sorted(), on: connection)
            for id in missing {
                found[id] = Result { try loaded[id].map { try Entry(merchant: $0.get(), checkedAt: now) } }
            }
        }
        entries.withLock { cache in
            for (id, result) in found {
                switch result {
                case .success(let entry?): cache[id] = entry
                case .success(nil): cache.removeValue(forKey: id)
                case .failure: break
                }
            }
        }
        return found
    }
}

extension MerchantDirectory.Entry {
    /// The merchant with its identities parsed once: the keyring decryption uses.
    init(merchant: Merchant, checkedAt: Date) throws {
        var identities: [MerchantIdentity] = []
        for (index, summary) in merchant.config.identities.enumerated() where index < merchant.secrets.privateKeys.count {
            identities.append(try MerchantIdentity(certificatePEM: summary.certificatePem, privateKeyPEM: merchant.secrets.privateKeys[index]))
        }
        self.init(merchant: merchant, keyring: MerchantKeyring(identities: identities), checkedAt: checkedAt)
    }
}

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
