import Foundation
import PaymentStages
import PayPipeDevTools
import Testing

/// `paypipe sandbox init --gateway-url/--webhook-url` on an existing sandbox: a stack on other ports (PAYPIPE_PORT_BASE)
/// reusing the directory must get its own simulator and receiver URLs, with the document's secrets kept.
@Suite struct SandboxEnvironmentTests {
    static func document(_ directory: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/merchant.json"))) as? [String: Any] ?? [:]
    }

    @Test func explicitURLsReplaceThoseOfAnExistingDocumentAndKeepItsSecrets() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try SandboxEnvironment.open(directory: directory)
        let first = try Self.document(directory)
        let firstGateway = first["gateway"] as? [String: Any], firstWebhook = first["webhook"] as? [String: Any]
        #expect(firstGateway?["baseUrl"] as? String == "http://127.0.0.1:9180")

        _ = try SandboxEnvironment.open(directory: directory, endpoints: .init(
            gatewayURL: "http://127.0.0.1:18480", webhookURL: "http://127.0.0.1:18490/webhooks"))
        let second = try Self.document(directory)
        let gateway = second["gateway"] as? [String: Any], webhook = second["webhook"] as? [String: Any]
        #expect(gateway?["baseUrl"] as? String == "http://127.0.0.1:18480")
        #expect(webhook?["url"] as? String == "http://127.0.0.1:18490/webhooks")
        #expect(gateway?["jwtSecret"] as? String == firstGateway?["jwtSecret"] as? String)
        #expect(webhook?["secret"] as? String == firstWebhook?["secret"] as? String)

        // Without URLs, a later open leaves the document as it is.
        _ = try SandboxEnvironment.open(directory: directory)
        #expect((try Self.document(directory)["gateway"] as? [String: Any])?["baseUrl"] as? String == "http://127.0.0.1:18480")
    }
}
