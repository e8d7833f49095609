import ApplePay
import Foundation
import Pipeline
import Postgres
import Synchronization

/// Workers' cache of merchants and their parsed Apple Pay keyrings.
///
/// Parsing certificates and private keys per message would dominate decryption cost, so a merchant is
/// parsed once per configuration version. Entries are revalidated against `merchants.updated_at` at most
/// every `ttl` seconds, which is how workers pick up `paypipe merchant apply` without a restart.
public final class MerchantDirectory: Sendable {
    public struct Entry: Sendable {
        public let merchant: MerchantStore.Merchant
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
        if let cached = entries.withLock({ $0[id] }) {
            if now.timeIntervalSince(cached.checkedAt) < ttl { return cached }
            if let updatedAt = try store.updatedAt(id, on: connection), updatedAt == cached.merchant.updatedAt {
                let refreshed = Entry(merchant: cached.merchant, keyring: cached.keyring, checkedAt: now)
                entries.withLock { $0[id] = refreshed }
                return refreshed
            }
        }
        guard let merchant = try store.load(id, on: connection) else {
            entries.withLock { _ = $0.removeValue(forKey: id) }
            return nil
        }
        var identities: [MerchantIdentity] = []
        for (index, summary) in merchant.config.identities.enumerated() where index < merchant.secrets.privateKeys.count {
            identities.append(try MerchantIdentity(certificatePEM: summary.certificatePem, privateKeyPEM: merchant.secrets.privateKeys[index]))
        }
        let entry = Entry(merchant: merchant, keyring: MerchantKeyring(identities: identities), checkedAt: now)
        entries.withLock { $0[id] = entry }
        return entry
    }
}
