import ApplePay
import Crypto
import Foundation
import Pipeline

/// Everything a local run needs, created once in a directory (`paypipe sandbox init --dir DIR`):
/// the sandbox Apple Pay PKI (`pki/`), a data key (`data.key`, mode 0600) and a merchant document
/// (`merchant.json`) whose identities (EC and RSA) come from that PKI. Idempotent: existing files are
/// reused, so sample tokens minted later still match the applied merchant.
public struct SandboxEnvironment: Sendable {
    public static let merchantId = "sandbox-merchant"
    public static let appleMerchantIdentifier = "merchant.dev.paypipe.sandbox"

    public let directory: String
    public let pki: SandboxPKI
    public let ecMerchant: SandboxMerchant
    public let rsaMerchant: SandboxMerchant

    public var pkiDirectory: String { directory + "/pki" }
    public var trustRootPath: String { pkiDirectory + "/root.cert.pem" }
    public var dataKeyPath: String { directory + "/data.key" }
    public var merchantDocumentPath: String { directory + "/merchant.json" }

    public static func open(directory: String) throws -> SandboxEnvironment {
        let pki = try SandboxPKI.loadOrCreate(directory: directory + "/pki")
        let ec = try pki.merchant(appleMerchantIdentifier, keyType: .ec)
        let rsa = try pki.merchant(appleMerchantIdentifier + ".rsa", keyType: .rsa)
        let environment = SandboxEnvironment(directory: directory, pki: pki, ecMerchant: ec, rsaMerchant: rsa)
        try environment.writeDataKeyIfMissing()
        try environment.writeMerchantDocumentIfMissing()
        return environment
    }

    private func writeDataKeyIfMissing() throws {
        guard !FileManager.default.fileExists(atPath: dataKeyPath) else { return }
        let key = Data(SecureRandom.bytes(count: 32)).base64EncodedString() + "\n"
        guard FileManager.default.createFile(atPath: dataKeyPath, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: dataKeyPath])
        }
    }

    /// The merchant document for the sandbox merchant (gateway simulator and webhook receiver on loopback).
    public func merchantDocument() -> MerchantDocument {
        MerchantDocument(
            id: Self.merchantId, appleMerchantIdentifier: Self.appleMerchantIdentifier,
            identities: [ecMerchant, rsaMerchant].map {
                MerchantDocument.Identity(certificateFile: $0.certificatePath.map(relative), privateKeyFile: $0.privateKeyPath.map(relative))
            },
            gateway: MerchantDocument.Gateway(
                type: "trustpayments", baseUrl: "http://127.0.0.1:9180", siteReference: "test_paypipe00001",
                jwtUsername: "jwt@paypipe.sandbox", jwtSecret: "sandbox-" + Hex.encode(SecureRandom.bytes(count: 16)),
                mode: .merchantDecrypts, requestTypes: ["AUTH"]),
            webhook: MerchantDocument.Webhook(
                url: "http://127.0.0.1:9190/webhooks", secret: "whsec_" + Data(SecureRandom.bytes(count: 24)).base64EncodedString()))
    }

    /// Paths in the document are relative to its own folder, so the sandbox directory can move (or be a
    /// container volume) without rewriting it.
    private func relative(_ path: String) -> String {
        path.hasPrefix(directory + "/") ? String(path.dropFirst(directory.count + 1)) : path
    }

    private func writeMerchantDocumentIfMissing() throws {
        guard !FileManager.default.fileExists(atPath: merchantDocumentPath) else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(merchantDocument())
        guard FileManager.default.createFile(atPath: merchantDocumentPath, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: merchantDocumentPath])
        }
    }
}
