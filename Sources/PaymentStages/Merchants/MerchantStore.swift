import ApplePay
import Crypto
import Foundation
import Pipeline
import Postgres

/// Reads and writes merchants. The document is split on write: non-secret settings go to
/// `merchants.config` (jsonb), secrets to one AES-256-GCM blob under the data key (AAD = merchant id).
public struct MerchantStore: Sendable {
    public let vault: DataVault

    public init(vault: DataVault) {
        self.vault = vault
    }

    public enum MerchantError: Error, Equatable, CustomStringConvertible {
        case invalidDocument(String)

        public var description: String {
            switch self {
            case .invalidDocument(let reason): "invalid merchant document: \(reason)"
            }
        }
    }

    /// The merchant this store loads (``PaymentStages/Merchant``, declared beside the directory that serves it to workers).
    public typealias Merchant = PaymentStages.Merchant

    /// Validates and upserts a document. Identities are parsed here (certificate, key, their match),
    /// so a broken document is refused at apply time rather than failing payments later. Outside sandbox a
    /// `privateKeyFile` must be private to the applying user (``SecretFile``), like every secret file. The gateway's
    /// `baseUrl` carries card data, so it must pass `transport` (default: the deployment's rule without extra sandbox
    /// hosts, ``CardDataTransportPolicy``): `https://` outside sandbox.
    @discardableResult
    public func apply(_ document: MerchantDocument, baseDirectory: URL?, deployment: DeploymentEnvironment = .production,
                      transport: CardDataTransportPolicy? = nil, on connection: PostgresConnection) throws -> Merchant {
        guard document.id.wholeMatch(of: /[A-Za-z0-9._-]{1,64}/) != nil else {
            throw MerchantError.invalidDocument("id must be 1-64 characters [A-Za-z0-9._-]")
        }
        var summaries: [MerchantConfig.IdentitySummary] = []
        var privateKeys: [String] = []
        for (index, identity) in document.identities.enumerated() {
            let certificate = try Self.pem(identity.certificatePem, file: identity.certificateFile, base: baseDirectory,
                                           what: "identities[\(index)] certificate", secret: nil)
            let key = try Self.pem(identity.privateKeyPem, file: identity.privateKeyFile, base: baseDirectory,
                                   what: "identities[\(index)] private key", secret: deployment)
            let parsed: MerchantIdentity
            do {
                parsed = try MerchantIdentity(certificatePEM: certificate, privateKeyPEM: key)
            } catch {
                throw MerchantError.invalidDocument("identities[\(index)]: \(error)")
            }
            summaries.append(MerchantConfig.IdentitySummary(
                certificatePem: certificate, publicKeyHash: Data(parsed.publicKeyHash).base64EncodedString(),
                keyType: "\(parsed.keyType)", notAfter: CertificateExpiry.iso8601(parsed.certificate.notAfter.date)))
            privateKeys.append(key)
        }
        if let gateway = document.gateway, let problem = ConnectorDocument.problem(gateway) {
            // Refused now rather than failing every payment later.
            throw MerchantError.invalidDocument(problem)
        }
        if let gateway = document.gateway {
            do throws(CapturePolicy.Invalid) {
                if try gateway.capturePolicy().mode == .manual, let problem = ConnectorDocument.manualCaptureProblem(gateway) {
                    throw CapturePolicy.Invalid(reason: problem)
                }
            } catch {
                throw MerchantError.invalidDocument("gateway.\(error.reason)")
            }
        }
        let gateway = document.gateway.map { gateway in
            MerchantConfig.Gateway(
                type: gateway.type, baseUrl: gateway.baseUrl, siteReference: gateway.siteReference,
                jwtUsername: gateway.jwtUsername, mode: gateway.mode, requestTypes: gateway.requestTypes ?? ["AUTH"],
                transport: gateway.resolvedTransport, webservicesUsername: gateway.webservicesUsername,
                sections: gateway.sections.withoutSecrets,
                captureMode: gateway.captureMode, captureWithin: gateway.captureWithin)
        }
        if let gateway, let refusal = (transport ?? CardDataTransportPolicy(deployment: deployment)).refusal(gateway.baseUrl) {
            throw MerchantError.invalidDocument("gateway.baseUrl: \(refusal)")
        }
        if let gateway, gateway.mode == .merchantDecrypts, summaries.isEmpty {
            throw MerchantError.invalidDocument("merchant-decrypts mode needs at least one identity")
        }
        let identityCertificate = try document.merchantIdentityCertificateFile.map { file in
            try Self.certificateSummary(try Self.pem(nil, file: file, base: baseDirectory, what: "merchantIdentityCertificateFile", secret: nil))
        }
        if let publishers = document.publishers, let problem = MerchantPublishers.problem(publishers.names) {
            throw MerchantError.invalidDocument(problem)
        }
        if let rate = document.webhook?.ratePerSecond, !(rate > 0 && rate <= 10_000) {
            throw MerchantError.invalidDocument("webhook.ratePerSecond must be > 0 and at most 10000")
        }
        let config = MerchantConfig(
            identities: summaries, gateway: gateway,
            webhook: document.webhook.map { MerchantConfig.Webhook(url: $0.url, enabled: true, ratePerSecond: $0.ratePerSecond) },
            merchantIdentityCertificate: identityCertificate, applicationDataCheck: document.applicationDataCheck,
            publishers: document.publishers?.names)
        if let webhook = document.webhook {
            let named = (webhook.secret.map { [("webhook.secret", $0)] } ?? [])
                + (webhook.previousSecrets ?? []).enumerated().map { ("webhook.previousSecrets[\($0.offset)]", $0.element) }
            for (field, secret) in named {
                if let problem = WebhookSecretPolicy.problem(secret) { throw MerchantError.invalidDocument("\(field) \(problem)") }
            }
        }
        let secrets = MerchantSecrets(
            privateKeys: privateKeys, jwtSecret: document.gateway?.jwtSecret,
            webhookSecrets: (document.webhook?.secret.map { [$0] } ?? []) + (document.webhook?.previousSecrets ?? []),
            webservicesPassword: document.gateway?.webservicesPassword, connectorSecrets: document.gateway?.sections.secrets ?? [:])
        let sealed = try vault.seal(Array(try JSONEncoder().encode(secrets)), aad: Array(document.id.utf8))
        let configJSON = String(decoding: try JSONEncoder().encode(config), as: UTF8.self)
        try connection.query(
            """
            INSERT INTO merchants (id, apple_merchant_identifier, config, secrets_ciphertext, secrets_nonce, secrets_key_id)
            VALUES ($1, $2, $3::jsonb, $4, $5, $6)
            ON CONFLICT (id) DO UPDATE SET apple_merchant_identifier = EXCLUDED.apple_merchant_identifier,
                config = EXCLUDED.config, secrets_ciphertext = EXCLUDED.secrets_ciphertext,
                secrets_nonce = EXCLUDED.secrets_nonce, secrets_key_id = EXCLUDED.secrets_key_id, updated_at = clock_timestamp()
            """,
            [document.id, document.appleMerchantIdentifier, configJSON, sealed.ciphertext, sealed.nonce, sealed.keyId])
        return try load(document.id, on: connection)!
    }

    public func load(_ id: String, on connection: PostgresConnection) throws -> Merchant? {
        try load([id], on: connection)[id]?.get()
    }

    /// The merchants of `ids` that exist, in one statement however many. A row whose configuration does not decode or
    /// whose secrets do not open is that merchant's error: the others still load (a batch's other merchants' messages
    /// go on).
    public func load(_ ids: [String], on connection: PostgresConnection) throws -> [String: Result<Merchant, any Error>] {
        let rows = try connection.query(
            """
            SELECT id, apple_merchant_identifier, config::text AS config, secrets_ciphertext, secrets_nonce,
                   secrets_key_id, updated_at
            FROM merchants WHERE id = ANY($1::text[])
            """, [PostgresArray(ids)])
        var merchants: [String: Result<Merchant, any Error>] = [:]
        for row in rows {
            let id = try row.decode("id", as: String.self)
            merchants[id] = Result { try merchant(id, from: row) }
        }
        return merchants
    }

    private func merchant(_ id: String, from row: PostgresRow) throws -> Merchant {
        let config = try JSONDecoder().decode(MerchantConfig.self, from: Data(try row.decode("config", as: String.self).utf8))
        var secrets = MerchantSecrets(privateKeys: [], jwtSecret: nil, webhookSecrets: [])
        if let ciphertext = try row.decode("secrets_ciphertext", as: [UInt8]?.self),
           let nonce = try row.decode("secrets_nonce", as: [UInt8]?.self),
           let keyId = try row.decode("secrets_key_id", as: String?.self) {
            let plaintext = try vault.open(.init(keyId: keyId, nonce: nonce, ciphertext: ciphertext), aad: Array(id.utf8))
            secrets = try JSONDecoder().decode(MerchantSecrets.self, from: Data(plaintext))
        }
        return Merchant(
            id: id, appleMerchantIdentifier: try row.decode("apple_merchant_identifier", as: String?.self),
            config: config, secrets: secrets, updatedAt: try row.decode("updated_at", as: Date.self))
    }

    public func listIds(on connection: PostgresConnection) throws -> [String] {
        try connection.query("SELECT id FROM merchants ORDER BY id").map { try $0.decode("id", as: String.self) }
    }

    /// Every merchant's non-secret configuration (no secrets decrypted): certificate expiry, `paypipe merchant certs`.
    /// With `unreadable`, a row whose configuration does not decode (one inserted without `merchant apply`: the
    /// column's default `{}`) is handed to it and left out, so it cannot hide every other merchant; without, it throws.
    public static func listConfigs(on connection: PostgresConnection, unreadable: ((_ id: String, _ error: any Error) -> Void)? = nil) throws
        -> [(id: String, config: MerchantConfig)] {
        try connection.query("SELECT id, config::text AS config FROM merchants ORDER BY id").compactMap { row in
            let id = try row.decode("id", as: String.self)
            do {
                return (id, try JSONDecoder().decode(MerchantConfig.self, from: Data(try row.decode("config", as: String.self).utf8)))
            } catch {
                guard let unreadable else { throw error }
                unreadable(id, error)
                return nil
            }
        }
    }

    /// Last change of each merchant of `ids` that exists, in one statement: cheap cache revalidation.
    public func updatedAt(_ ids: [String], on connection: PostgresConnection) throws -> [String: Date] {
        var changed: [String: Date] = [:]
        for row in try connection.query("SELECT id, updated_at FROM merchants WHERE id = ANY($1::text[])", [PostgresArray(ids)]) {
            changed[try row.decode("id", as: String.self)] = try row.decode("updated_at", as: Date.self)
        }
        return changed
    }

    /// The merchant-identity certificate: exactly one certificate and no private key in the file.
    private static func certificateSummary(_ pem: String) throws -> MerchantConfig.CertificateSummary {
        guard !pem.contains("PRIVATE KEY") else {
            throw MerchantError.invalidDocument("merchantIdentityCertificateFile: holds a private key; give the certificate only")
        }
        let certificates: [Certificate]
        do {
            certificates = try Certificate.certificates(pem: pem)
        } catch {
            throw MerchantError.invalidDocument("merchantIdentityCertificateFile: \(error)")
        }
        guard certificates.count == 1, let certificate = certificates.first else {
            throw MerchantError.invalidDocument("merchantIdentityCertificateFile: expected one certificate, found \(certificates.count)")
        }
        return MerchantConfig.CertificateSummary(
            certificatePem: pem, subject: certificate.subject, notAfter: CertificateExpiry.iso8601(certificate.notAfter.date))
    }

    /// An inline PEM or the file's text; `secret` is the deployment whose secret-file rule applies to the file.
    private static func pem(_ inline: String?, file: String?, base: URL?, what: String, secret: DeploymentEnvironment?) throws -> String {
        if let inline { return inline }
        guard let file else { throw MerchantError.invalidDocument("\(what): give a PEM inline or a file") }
        let url = file.hasPrefix("/") ? URL(fileURLWithPath: file) : (base ?? URL(fileURLWithPath: ".")).appendingPathComponent(file)
        if let secret { try SecretFile.requirePrivate(url.path, variable: "\(what) (privateKeyFile)", deployment: secret) }
        guard let text = try? String(contentsOf: url, encoding: .utf8) else {
            throw MerchantError.invalidDocument("\(what): cannot read \(url.path)")
        }
        return text
    }
}
