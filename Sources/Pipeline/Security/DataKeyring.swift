import Crypto
import Foundation

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
