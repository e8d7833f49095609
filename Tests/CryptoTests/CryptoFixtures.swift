import Foundation

/// Locates the shared Apple Pay fixtures (PayU step vectors, Apple CA) from the test sources.
enum CryptoFixtures {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/applepay")

    static func string(_ relative: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(relative), encoding: .utf8)
    }

    static func bytes(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent(relative)))
    }

    static func payu() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(bytes("payu/expected.json"))) as! [String: Any]
    }

    static func base64(_ string: String) -> [UInt8] {
        Array(Data(base64Encoded: string)!)
    }
}
