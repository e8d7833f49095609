import Crypto
import Foundation

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
