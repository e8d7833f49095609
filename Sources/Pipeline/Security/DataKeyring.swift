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

    /// Reads `PAYPIPE_DATA_KEY` (base64 of 32 bytes) or `PAYPIPE_DATA_KEY_FILE` (a file holding that),
    /// plus optional `PAYPIPE_DATA_KEY_PREVIOUS` (comma-separated). Outside sandbox a key file must not
    /// be readable by group or others.
    public static func load(_ environment: EnvironmentReader, deployment: DeploymentEnvironment) throws(ConfigurationError) -> DataKeyring {
        let current: DataKey
        if let inline = environment.raw("PAYPIPE_DATA_KEY") {
            current = try DataKey(base64: inline, variable: "PAYPIPE_DATA_KEY")
        } else if let path = environment.raw("PAYPIPE_DATA_KEY_FILE") {
            if deployment == .production { try FilePermissions.requirePrivate(path, variable: "PAYPIPE_DATA_KEY_FILE") }
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError(variable: "PAYPIPE_DATA_KEY_FILE", problem: "cannot read \(path)")
            }
            current = try DataKey(base64: text, variable: "PAYPIPE_DATA_KEY_FILE")
        } else {
            throw ConfigurationError(variable: "PAYPIPE_DATA_KEY", problem: "is required (or PAYPIPE_DATA_KEY_FILE): base64 of 32 random bytes, e.g. `openssl rand -base64 32`")
        }
        let previous = try (environment.raw("PAYPIPE_DATA_KEY_PREVIOUS") ?? "")
            .split(separator: ",")
            .map { text throws(ConfigurationError) in try DataKey(base64: String(text), variable: "PAYPIPE_DATA_KEY_PREVIOUS") }
        return DataKeyring(current: current, previous: previous)
    }
}
