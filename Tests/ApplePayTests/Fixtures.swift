import Foundation

/// Locates the copied public test vectors next to the test sources (no SwiftPM resources, no ../shared).
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/applepay")

    static func path(_ relative: String) -> String {
        directory.appendingPathComponent(relative).path
    }

    static func bytes(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent(relative)))
    }

    static func string(_ relative: String) throws -> String {
        String(decoding: try bytes(relative), as: UTF8.self)
    }

    static func json(_ relative: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(try bytes(relative))) as! [String: Any]
    }

    /// An ISO 8601 UTC instant ("2021-09-01T19:03:06Z").
    static func date(_ iso: String) -> Date {
        ISO8601DateFormatter().date(from: iso)!
    }
}
