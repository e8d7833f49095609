import ApplePay
import ApplePaySandbox
import Crypto
import Foundation
import PaymentStages
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
    /// A stand-in for the Apple merchant-identity certificate (certificate only, valid 25 months like Apple's), so
    /// the sandbox merchant shows one in `paypipe merchant certs`.
    public var merchantIdentityCertificatePath: String { pkiDirectory + "/merchant-identity.cert.pem" }
    public var merchantDocumentPath: String { directory + "/merchant.json" }
    /// `KEY=value` lines for the sandbox's gateway simulator and webhook receiver (their secrets come from the
    /// merchant document), for shells and containers that cannot parse JSON: `. services.env`.
    public var servicesEnvironmentPath: String { directory + "/services.env" }

    /// Where the sandbox merchant's gateway and webhook live: the local simulator and receiver by default,
    /// service names under docker compose.
    /// A URL given explicitly also replaces the one in an existing merchant document (a stack on other ports reusing
    /// the sandbox directory); the defaults only fill a new document.
    public struct Endpoints: Sendable {
        public var gatewayURL = "http://127.0.0.1:9180"
        public var webhookURL = "http://127.0.0.1:9190/webhooks"
        let explicitGatewayURL: String?
        let explicitWebhookURL: String?

        public init(gatewayURL: String? = nil, webhookURL: String? = nil) {
            explicitGatewayURL = gatewayURL
            explicitWebhookURL = webhookURL
            if let gatewayURL { self.gatewayURL = gatewayURL }
            if let webhookURL { self.webhookURL = webhookURL }
        }
    }

    public static func open(directory: String, endpoints: Endpoints = Endpoints()) throws -> SandboxEnvironment {
        let pki = try SandboxPKI.loadOrCreate(directory: directory + "/pki")
        let ec = try pki.merchant(appleMerchantIdentifier, keyType: .ec)
        let rsa = try pki.merchant(appleMerchantIdentifier + ".rsa", keyType: .rsa)
        let environment = SandboxEnvironment(directory: directory, pki: pki, ecMerchant: ec, rsaMerchant: rsa)
        try environment.writeDataKeyIfMissing()
        try environment.writeMerchantIdentityCertificateIfMissing()
        try environment.writeMerchantDocument(endpoints)
        try environment.writeServicesEnvironment()
        return environment
    }

    private func writeDataKeyIfMissing() throws {
        guard !FileManager.default.fileExists(atPath: dataKeyPath) else { return }
        let key = Data(SecureRandom.bytes(count: 32)).base64EncodedString() + "\n"
        guard FileManager.default.createFile(atPath: dataKeyPath, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: dataKeyPath])
        }
    }

    private func writeMerchantIdentityCertificateIfMissing() throws {
        guard !FileManager.default.fileExists(atPath: merchantIdentityCertificatePath) else { return }
        let key = try PrivateKey.generateP256()
        let certificate = try SandboxPKI.issue(
            commonName: "Merchant ID: \(Self.appleMerchantIdentifier) (PayPipe sandbox)", key: key.publicKey, issuer: nil,
            signingKey: key, certificateAuthority: false, extensions: [], notAfter: Date().addingTimeInterval(25 * 30.4 * 86_400))
        try Data(try certificate.pem().utf8).write(to: URL(fileURLWithPath: merchantIdentityCertificatePath))
    }

    /// The merchant document for the sandbox merchant (gateway simulator and webhook receiver on loopback).
    public func merchantDocument(_ endpoints: Endpoints = Endpoints()) -> MerchantDocument {
        MerchantDocument(
            id: Self.merchantId, appleMerchantIdentifier: Self.appleMerchantIdentifier,
            identities: [ecMerchant, rsaMerchant].map {
                MerchantDocument.Identity(certificateFile: $0.certificatePath.map(relative), privateKeyFile: $0.privateKeyPath.map(relative))
            },
            gateway: MerchantDocument.Gateway(
                type: "trustpayments", baseUrl: endpoints.gatewayURL, siteReference: "test_paypipe00001",
                jwtUsername: "jwt@paypipe.sandbox", jwtSecret: "sandbox-" + Hex.encode(SecureRandom.bytes(count: 16)),
                mode: .merchantDecrypts, requestTypes: ["AUTH"]),
            webhook: MerchantDocument.Webhook(
                url: endpoints.webhookURL, secret: "whsec_" + Data(SecureRandom.bytes(count: 24)).base64EncodedString()),
            merchantIdentityCertificateFile: relative(merchantIdentityCertificatePath))
    }

    /// Paths in the document are relative to its own folder, so the sandbox directory can move (or be a
    /// container volume) without rewriting it.
    private func relative(_ path: String) -> String {
        path.hasPrefix(directory + "/") ? String(path.dropFirst(directory.count + 1)) : path
    }

    /// Writes a new document, or points an existing one at the explicitly given URLs, keeping its secrets and keys
    /// (they are what the running simulator, receiver and stored card data were set up with).
    private func writeMerchantDocument(_ endpoints: Endpoints) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard FileManager.default.fileExists(atPath: merchantDocumentPath) else {
            try Self.writeSecret(try encoder.encode(merchantDocument(endpoints)), to: merchantDocumentPath)
            return
        }
        guard endpoints.explicitGatewayURL != nil || endpoints.explicitWebhookURL != nil else { return }
        let data = try Data(contentsOf: URL(fileURLWithPath: merchantDocumentPath))
        guard var document = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { return }
        if let url = endpoints.explicitGatewayURL, var gateway = document["gateway"] as? [String: Any] {
            gateway["baseUrl"] = url
            document["gateway"] = gateway
        }
        if let url = endpoints.explicitWebhookURL, var webhook = document["webhook"] as? [String: Any] {
            webhook["url"] = url
            document["webhook"] = webhook
        }
        let updated = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        if updated != data { try Self.writeSecret(updated, to: merchantDocumentPath) }
    }

    /// Rewritten on every open from the merchant document on disk, so it always matches what was applied.
    private func writeServicesEnvironment() throws {
        let document = try JSONDecoder().decode(MerchantDocument.self, from: Data(contentsOf: URL(fileURLWithPath: merchantDocumentPath)))
        var lines: [String] = []
        if let gateway = document.gateway, let secret = gateway.jwtSecret {
            lines.append("PAYPIPE_SIM_MERCHANTS='\(gateway.jwtUsername)=\(secret)'")
        }
        if let secret = document.webhook?.secret {
            lines.append("PAYPIPE_WEBHOOK_SECRET='\(secret)'")
        }
        try Self.writeSecret(Data((lines.joined(separator: "\n") + "\n").utf8), to: servicesEnvironmentPath)
    }

    private static func writeSecret(_ data: Data, to path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }
}
