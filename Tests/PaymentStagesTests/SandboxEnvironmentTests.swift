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

    /// A sandbox made before the `webservices` transport has a `jwt` merchant.json as user jwt@paypipe.sandbox. The
    /// jwt twin must not name that user with another secret: the simulator keeps one secret per user, and every
    /// answer to the other merchant failed verification (adversarial checks: needs_review, reconciliation_inconclusive).
    @Test func theJWTTwinOfAPreexistingJWTMerchantSharesItsSecret() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try SandboxEnvironment.open(directory: directory)
        var old = try Self.document(directory)
        var gateway = old["gateway"] as? [String: Any] ?? [:]
        for key in ["transport", "webservicesUsername", "webservicesPassword"] { gateway[key] = nil }
        gateway["jwtUsername"] = "jwt@paypipe.sandbox"
        gateway["jwtSecret"] = "sandbox-the-old-secret"
        old["gateway"] = gateway
        try JSONSerialization.data(withJSONObject: old).write(to: URL(fileURLWithPath: directory + "/merchant.json"))
        // As an earlier init wrote it: the same user, a fresh secret.
        var twin = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/merchant-jwt.json"))) as? [String: Any] ?? [:]
        var twinGateway = twin["gateway"] as? [String: Any] ?? [:]
        twinGateway["jwtSecret"] = "sandbox-another-secret"
        twin["gateway"] = twinGateway
        try JSONSerialization.data(withJSONObject: twin).write(to: URL(fileURLWithPath: directory + "/merchant-jwt.json"))

        _ = try SandboxEnvironment.open(directory: directory)
        let written = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/merchant-jwt.json"))) as? [String: Any]
        let writtenGateway = written?["gateway"] as? [String: Any]
        #expect(writtenGateway?["jwtUsername"] as? String == "jwt@paypipe.sandbox")
        #expect(writtenGateway?["jwtSecret"] as? String == "sandbox-the-old-secret")
        let services = try String(contentsOfFile: directory + "/services.env", encoding: .utf8)
        #expect(services.contains("PAYPIPE_SIM_MERCHANTS='jwt@paypipe.sandbox=sandbox-the-old-secret'\n"))
    }
}
