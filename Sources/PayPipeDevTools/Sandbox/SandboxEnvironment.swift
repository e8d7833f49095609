import ApplePay
import ApplePaySandbox
import Crypto
import Foundation
import PaymentStages
import Pipeline

/// Everything a local run needs, created once in a directory (`paypipe sandbox init --dir DIR`):
/// the sandbox Apple Pay PKI (`pki/`), a data key (`data.key`, mode 0600) and a merchant document
/// (`merchant.json`) whose identities (EC and RSA) come from that PKI, plus its twins on the `jwt` transport
/// (`merchant-jwt.json`), on OPP (`merchant-opp.json`) and on TapPay (`merchant-tappay.json`), all pointing at the
/// gateway simulator's faces. Idempotent: existing files are reused, so sample tokens minted later still match the
/// applied merchants.
public struct SandboxEnvironment: Sendable {
    public static let merchantId = "sandbox-merchant"
    /// A second sandbox merchant, the same identities and webhook, on the `jwt` transport: so a local run exercises
    /// both transports (`paypipe job publish --merchant sandbox-merchant-jwt`).
    public static let jwtMerchantId = "sandbox-merchant-jwt"
    /// A sandbox merchant on ACI's Open Payment Platform (the simulator's OPP face), merchant-decrypts with the same
    /// identities and webhook: `paypipe job publish --sample N --merchant sandbox-merchant-opp`.
    public static let oppMerchantId = "sandbox-merchant-opp"
    /// A sandbox merchant on TapPay (the simulator's TapPay face): its sample jobs carry a fresh `tapPayPrime`.
    public static let tapPayMerchantId = "sandbox-merchant-tappay"
    /// The OPP entity and TapPay merchant id of those merchants (the simulator's accounts, named in services.env).
    public static let oppEntityId = "8a8294174b7ecb28014b9699220015ca"
    public static let tapPayMerchantAccount = "paypipe_sandbox_tappay"
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
    /// The `jwt` merchant's document (``jwtMerchantId``).
    public var jwtMerchantDocumentPath: String { directory + "/merchant-jwt.json" }
    /// The OPP merchant's document (``oppMerchantId``).
    public var oppMerchantDocumentPath: String { directory + "/merchant-opp.json" }
    /// The TapPay merchant's document (``tapPayMerchantId``).
    public var tapPayMerchantDocumentPath: String { directory + "/merchant-tappay.json" }
    /// Every sandbox merchant's document, the Trust Payments ones first.
    public var merchantDocumentPaths: [String] { [merchantDocumentPath, jwtMerchantDocumentPath, oppMerchantDocumentPath, tapPayMerchantDocumentPath] }

    /// The connector a sandbox merchant id uses (Trust Payments for any other id).
    public static func connector(ofMerchant id: String) -> ConnectorKind {
        switch id {
        case oppMerchantId: .opp
        case tapPayMerchantId: .tapPay
        default: .trustPayments
        }
    }
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
                mode: .merchantDecrypts, requestTypes: ["AUTH"], transport: .webservices,
                webservicesUsername: "ws@paypipe.sandbox", webservicesPassword: "sandbox-" + Hex.encode(SecureRandom.bytes(count: 16))),
            webhook: MerchantDocument.Webhook(
                url: endpoints.webhookURL, secret: "whsec_" + Data(SecureRandom.bytes(count: 24)).base64EncodedString()),
            merchantIdentityCertificateFile: relative(merchantIdentityCertificatePath))
    }

    /// Paths in the document are relative to its own folder, so the sandbox directory can move (or be a
    /// container volume) without rewriting it.
    private func relative(_ path: String) -> String {
        path.hasPrefix(directory + "/") ? String(path.dropFirst(directory.count + 1)) : path
    }

    /// The `jwt` merchant's document: `main`'s identities and webhook, its own JWT user. A `main` from before the
    /// `webservices` transport already is that JWT user: the twin shares its secret, because the simulator knows one
    /// secret per user and would reject every answer for the other.
    public func jwtMerchantDocument(from main: MerchantDocument) -> MerchantDocument {
        var document = main
        document.id = Self.jwtMerchantId
        if var gateway = document.gateway {
            let user = "jwt@paypipe.sandbox"
            let sharedSecret = gateway.jwtUsername == user ? gateway.jwtSecret : nil
            gateway.transport = .jwt
            gateway.webservicesUsername = nil
            gateway.webservicesPassword = nil
            gateway.jwtUsername = user
            gateway.jwtSecret = sharedSecret ?? "sandbox-" + Hex.encode(SecureRandom.bytes(count: 16))
            document.gateway = gateway
        }
        return document
    }

    /// The OPP merchant's document: `main`'s identities (it decrypts the tokens itself, `paymentBrand` APPLEPAY,
    /// `paymentType` DB) and webhook, gateway the simulator's OPP face with a bearer token of its own.
    public func oppMerchantDocument(from main: MerchantDocument) -> MerchantDocument {
        var document = main
        document.id = Self.oppMerchantId
        document.gateway = MerchantDocument.Gateway(
            type: ConnectorKind.opp.rawValue, baseUrl: main.gateway?.baseUrl ?? Endpoints().gatewayURL, siteReference: Self.oppEntityId,
            mode: .merchantDecrypts,
            opp: OPPSettings(entityId: Self.oppEntityId, accessToken: "sandbox-" + Hex.encode(SecureRandom.bytes(count: 16))))
        return document
    }

    /// The TapPay merchant's document: no identities (TapPay takes primes, the app's SDK handed the token to TapPay),
    /// `main`'s webhook, gateway the simulator's TapPay face with a partner key of its own; captured automatically.
    public func tapPayMerchantDocument(from main: MerchantDocument) -> MerchantDocument {
        var document = main
        document.id = Self.tapPayMerchantId
        document.identities = []
        document.merchantIdentityCertificateFile = nil
        document.gateway = MerchantDocument.Gateway(
            type: ConnectorKind.tapPay.rawValue, baseUrl: main.gateway?.baseUrl ?? Endpoints().gatewayURL, siteReference: Self.tapPayMerchantAccount,
            mode: .gatewayDecrypts,
            tapPay: TapPaySettings(merchantId: Self.tapPayMerchantAccount, partnerKey: "partner_" + Hex.encode(SecureRandom.bytes(count: 16))))
        return document
    }

    /// Whether `twin` names `main`'s JWT user with another secret (written by an earlier `sandbox init` before the
    /// twin shared the secret of a pre-existing `jwt` main): it must be written again.
    static func twinContradicts(_ twin: MerchantDocument, _ main: MerchantDocument) -> Bool {
        guard let mainUser = main.gateway?.jwtUsername, mainUser == twin.gateway?.jwtUsername else { return false }
        return main.gateway?.jwtSecret != twin.gateway?.jwtSecret
    }

    /// Writes new documents, or points existing ones at the explicitly given URLs, keeping their secrets and keys
    /// (they are what the running simulator, receiver and stored card data were set up with).
    private func writeMerchantDocument(_ endpoints: Endpoints) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        if !FileManager.default.fileExists(atPath: merchantDocumentPath) {
            try Self.writeSecret(try encoder.encode(merchantDocument(endpoints)), to: merchantDocumentPath)
        } else {
            try repoint(merchantDocumentPath, endpoints)
        }
        let main = try Self.readDocument(merchantDocumentPath)
        let twinExists = FileManager.default.fileExists(atPath: jwtMerchantDocumentPath)
        if try !twinExists || Self.twinContradicts(Self.readDocument(jwtMerchantDocumentPath), main) {
            try Self.writeSecret(try encoder.encode(jwtMerchantDocument(from: main)), to: jwtMerchantDocumentPath)
        } else {
            try repoint(jwtMerchantDocumentPath, endpoints)
        }
        // Sandboxes made before the other connectors get these documents on their next open.
        for (path, make) in [(oppMerchantDocumentPath, oppMerchantDocument(from:)), (tapPayMerchantDocumentPath, tapPayMerchantDocument(from:))] {
            if FileManager.default.fileExists(atPath: path) {
                try repoint(path, endpoints)
            } else {
                try Self.writeSecret(try encoder.encode(make(main)), to: path)
            }
        }
    }

    private func repoint(_ path: String, _ endpoints: Endpoints) throws {
        guard endpoints.explicitGatewayURL != nil || endpoints.explicitWebhookURL != nil else { return }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
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
        if updated != data { try Self.writeSecret(updated, to: path) }
    }

    /// Rewritten on every open from the merchant document on disk, so it always matches what was applied.
    private func writeServicesEnvironment() throws {
        let documents = try merchantDocumentPaths.map(Self.readDocument)
        let document = documents[0]
        var lines: [String] = []
        let jwtUsers = documents.compactMap { document in
            document.gateway.flatMap { gateway in gateway.jwtUsername.flatMap { user in gateway.jwtSecret.map { "\(user)=\($0)" } } }
        }
        let webservicesUsers = documents.compactMap { document in
            document.gateway.flatMap { gateway in gateway.webservicesUsername.flatMap { user in gateway.webservicesPassword.map { "\(user)=\($0)" } } }
        }
        // Both documents name one user when the twin shares a pre-existing main's JWT user: list it once.
        let distinctJWTUsers = jwtUsers.enumerated().filter { !jwtUsers[..<$0.offset].contains($0.element) }.map(\.element)
        if !distinctJWTUsers.isEmpty { lines.append("PAYPIPE_SIM_MERCHANTS='\(distinctJWTUsers.joined(separator: ","))'") }
        if !webservicesUsers.isEmpty { lines.append("PAYPIPE_SIM_WEBSERVICES_USERS='\(webservicesUsers.joined(separator: ","))'") }
        let oppTokens = documents.compactMap { $0.gateway?.opp.flatMap { opp in opp.accessToken.map { "\($0)=\(opp.entityId)" } } }
        if !oppTokens.isEmpty { lines.append("PAYPIPE_SIM_OPP_TOKENS='\(oppTokens.joined(separator: ","))'") }
        let tapPayPartners = documents.compactMap { $0.gateway?.tapPay.flatMap { tapPay in tapPay.partnerKey.map { "\($0)=\(tapPay.merchantId)" } } }
        if !tapPayPartners.isEmpty { lines.append("PAYPIPE_SIM_TAPPAY_PARTNERS='\(tapPayPartners.joined(separator: ","))'") }
        if let secret = document.webhook?.secret {
            lines.append("PAYPIPE_WEBHOOK_SECRET='\(secret)'")
        }
        try Self.writeSecret(Data((lines.joined(separator: "\n") + "\n").utf8), to: servicesEnvironmentPath)
    }

    private static func readDocument(_ path: String) throws -> MerchantDocument {
        try JSONDecoder().decode(MerchantDocument.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    private static func writeSecret(_ data: Data, to path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }
}
