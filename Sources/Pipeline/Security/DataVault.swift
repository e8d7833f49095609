import Crypto
import Foundation

/// Encrypts data at rest with AES-256-GCM under the data keyring.
///
/// The AAD binds a ciphertext to its row (e.g. the payment id), so a blob copied to another payment's
/// row fails to open instead of silently decrypting. A fresh random 96-bit nonce per seal.
public struct DataVault: Sendable {
    public let keyring: DataKeyring
    /// Seals per key (``DataKeySeals``), shared by copies of this vault.
    public let seals: DataKeySeals

    public init(keyring: DataKeyring, seals: DataKeySeals = DataKeySeals()) {
        self.keyring = keyring
        self.seals = seals
    }

    /// Exports ``DataKeySeals`` on `registry`.
    public func attach(metrics registry: MetricsRegistry) {
        seals.attach(metrics: registry, currentKeyId: keyring.current.id)
    }

    /// A sealed value as stored: key id, nonce, ciphertext with the 16-byte tag appended.
    public struct SealedBox: Sendable, Equatable {
        public let keyId: String
        public let nonce: [UInt8]
        public let ciphertext: [UInt8]

        public init(keyId: String, nonce: [UInt8], ciphertext: [UInt8]) {
            self.keyId = keyId
            self.nonce = nonce
            self.ciphertext = ciphertext
        }
    }

    public enum VaultError: Error, Equatable, CustomStringConvertible {
        case unknownKey(String)
        case authenticationFailed

        public var description: String {
            switch self {
            case .unknownKey(let id): "data sealed under key \(id), which is not configured (PAYPIPE_DATA_KEY / PAYPIPE_DATA_KEY_PREVIOUS)"
            case .authenticationFailed: "sealed data failed authentication (wrong key, row or tampering)"
            }
        }
    }

    public func seal(_ plaintext: [UInt8], aad: [UInt8]) throws -> SealedBox {
        let key = keyring.current
        let nonce = SecureRandom.bytes(count: 12)
        let sealed = try AESGCM.seal(key: key.bytes, nonce: nonce, plaintext: plaintext, aad: aad)
        seals.record(keyId: key.id)
        return SealedBox(keyId: key.id, nonce: nonce, ciphertext: sealed.ciphertext + sealed.tag)
    }

    public func open(_ box: SealedBox, aad: [UInt8]) throws -> [UInt8] {
        guard let key = keyring.key(id: box.keyId) else { throw VaultError.unknownKey(box.keyId) }
        guard box.ciphertext.count >= 16 else { throw VaultError.authenticationFailed }
        do {
            return try AESGCM.open(
                key: key.bytes, nonce: box.nonce, ciphertext: Array(box.ciphertext.dropLast(16)),
                tag: Array(box.ciphertext.suffix(16)), aad: aad)
        } catch {
            throw VaultError.authenticationFailed
        }
    }
}

/// AES-GCM seals per data key, exported as `paypipe_data_key_seals_total{key_id}`: each seal draws a random 96-bit
/// nonce, and NIST SP 800-38D bounds the invocations of one key with random nonces (docs/security.md gives the
/// rotation volume). Shared by every copy of a ``DataVault``; counted from start-up (Prometheus sums the workers).
public final class DataKeySeals: Sendable {
    public static let metric = "paypipe_data_key_seals_total"

    private let metrics = AttachedMetrics()

    public init() {}

    public func attach(metrics registry: MetricsRegistry, currentKeyId: String) {
        metrics.attach(registry) { registry in
            registry.register(Self.metric, kind: .counter, help: "AES-GCM seals (random 96-bit nonces) under each data key since start-up.")
            // Present from start-up at 0, so rate() and increase() see the first seal.
            registry.increment(Self.metric, labels: ["key_id": currentKeyId], by: 0)
        }
    }

    func record(keyId: String) {
        metrics.report { $0.increment(Self.metric, labels: ["key_id": keyId]) }
    }
}
