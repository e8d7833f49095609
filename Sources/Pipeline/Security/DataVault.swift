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

/// The current data key, which seals new data, and previous keys still accepted for opening old rows
/// during a rotation (`PAYPIPE_DATA_KEY_PREVIOUS`).
public struct DataKeyring: Sendable {
    public let current: DataKey
    public let previous: [DataKey]

    public init(current: DataKey, previous: [DataKey] = []) {
        self.current = current
        self.previous = previous
    }

    public func key(id: String) -> DataKey? {
        ([current] + previous).first { $0.id == id }
    }

    /// Reads `PAYPIPE_DATA_KEY` (base64 of 32 bytes) or `PAYPIPE_DATA_KEY_FILE` (a file holding that), plus the
    /// optional older keys of a rotation: `PAYPIPE_DATA_KEY_PREVIOUS` (comma-separated) and/or
    /// `PAYPIPE_DATA_KEY_PREVIOUS_FILE` (a file with one key per line or comma-separated). Outside sandbox both
    /// files must be private to the worker's user (``FilePermissions``), or the worker refuses to start.
    public static func load(_ environment: EnvironmentReader, deployment: DeploymentEnvironment) throws(ConfigurationError) -> DataKeyring {
        let current: DataKey
        if let inline = environment.raw("PAYPIPE_DATA_KEY") {
            current = try DataKey(base64: inline, variable: "PAYPIPE_DATA_KEY")
        } else if let path = environment.raw("PAYPIPE_DATA_KEY_FILE") {
            let text = try SecretFile.read(path, variable: "PAYPIPE_DATA_KEY_FILE", deployment: deployment)
            current = try DataKey(base64: text, variable: "PAYPIPE_DATA_KEY_FILE")
        } else {
            throw ConfigurationError(variable: "PAYPIPE_DATA_KEY", problem: "is required (or PAYPIPE_DATA_KEY_FILE): base64 of 32 random bytes, e.g. `openssl rand -base64 32`")
        }
        var previous = try keys(environment.raw("PAYPIPE_DATA_KEY_PREVIOUS") ?? "", variable: "PAYPIPE_DATA_KEY_PREVIOUS")
        if let path = environment.raw("PAYPIPE_DATA_KEY_PREVIOUS_FILE") {
            let text = try SecretFile.read(path, variable: "PAYPIPE_DATA_KEY_PREVIOUS_FILE", deployment: deployment)
            previous += try keys(text, variable: "PAYPIPE_DATA_KEY_PREVIOUS_FILE")
        }
        return DataKeyring(current: current, previous: previous)
    }

    /// Base64 keys separated by commas or newlines; blank entries are ignored.
    private static func keys(_ text: String, variable: String) throws(ConfigurationError) -> [DataKey] {
        try text.split(whereSeparator: { $0 == "," || $0.isNewline })
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
            .map { text throws(ConfigurationError) in try DataKey(base64: text, variable: variable) }
    }
}

/// A 256-bit data-encryption key for card data, claims and merchant secrets at rest.
///
/// The key id is derived from the key itself (first 16 hex digits of its SHA-256), so every process
/// names a key the same way without extra configuration, and a row records which key sealed it.
public struct DataKey: Sendable, Equatable {
    public let id: String
    let bytes: [UInt8]

    public init(bytes: [UInt8]) throws(ConfigurationError) {
        guard bytes.count == 32 else {
            throw ConfigurationError(variable: "PAYPIPE_DATA_KEY", problem: "must be base64 of exactly 32 bytes, got \(bytes.count) bytes")
        }
        self.bytes = bytes
        id = SHA256.hash(bytes).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    init(base64 text: String, variable: String) throws(ConfigurationError) {
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw ConfigurationError(variable: variable, problem: "is not valid base64")
        }
        do {
            try self.init(bytes: Array(data))
        } catch {
            throw ConfigurationError(variable: variable, problem: error.problem)
        }
    }

    /// Never print key material, even by accident in an interpolation.
    public var description: String { "DataKey(\(id))" }
}