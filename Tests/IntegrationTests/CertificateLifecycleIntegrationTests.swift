import ApplePay
import ApplePaySandbox
import Crypto
import Foundation
import PaymentStages
import Pipeline
import Postgres
import Testing

extension Integration {
/// Certificate and key lifecycle on the real database: `notAfter` recorded at apply, the merchant-identity
/// certificate, the decrypt worker's expiry gauge and `certificate_expiring` warnings (sandbox certificates minted to
/// expire soon), and the per-key usage counts `paypipe merchant keys --usage` reads.
@Suite struct CertificateLifecycleIntegrationTests {
    static let merchantId = "expiring-merchant"

    /// A payment-processing certificate and key for `merchantId`, expiring in `days`.
    static func identity(expiringInDays days: Double) throws -> (certificate: Certificate, key: PrivateKey) {
        let key = try PrivateKey.generateP256()
        let merchantIdHex = Hex.encode(SHA256.hash(Array("merchant.\(merchantId)".utf8))).uppercased()
        let certificate = try SandboxPKI.issue(
            commonName: "Apple Pay Payment Processing:merchant.\(merchantId) (expiring)", key: key.publicKey, issuer: nil,
            signingKey: key, certificateAuthority: false,
            extensions: [CertificateExtension(ApplePayOID.merchantIdentifier, valueDER: DERWriter.utf8String(merchantIdHex))],
            notAfter: Date().addingTimeInterval(days * 86_400))
        return (certificate, key)
    }

    static func document(_ identity: (certificate: Certificate, key: PrivateKey), merchantIdentityFile: String?) throws -> MerchantDocument {
        MerchantDocument(
            id: merchantId, appleMerchantIdentifier: "merchant.\(merchantId)",
            identities: [.init(certificatePem: try identity.certificate.pem(), privateKeyPem: try identity.key.pkcs8PEM())],
            gateway: nil, webhook: nil, merchantIdentityCertificateFile: merchantIdentityFile)
    }

    @Test func expiryIsRecordedExportedAndWarnedAboutOnceADay() throws {
        try TestServices.resetDatabase()
        let database = try TestServices.database()
        defer { database.close() }
        let vault = DataVault(keyring: DataKeyring(current: try DataKey(bytes: Array(repeating: 7, count: 32))))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-certs-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let processing = try Self.identity(expiringInDays: 10)
        let merchantIdentity = try Self.identity(expiringInDays: 5)
        try merchantIdentity.certificate.pem().write(to: folder.appendingPathComponent("merchant_id.pem"), atomically: true, encoding: .utf8)

        let applied = try MerchantStore(vault: vault).apply(
            try Self.document(processing, merchantIdentityFile: "merchant_id.pem"), baseDirectory: folder, deployment: .sandbox, on: database)
        #expect(applied.config.identities.first?.notAfter == CertificateExpiry.iso8601(processing.certificate.notAfter.date))
        #expect(applied.config.merchantIdentityCertificate?.notAfter == CertificateExpiry.iso8601(merchantIdentity.certificate.notAfter.date))

        // A merchant-identity file holding a private key is refused: the document names the certificate only.
        try (merchantIdentity.certificate.pem() + merchantIdentity.key.pkcs8PEM())
            .write(to: folder.appendingPathComponent("with-key.pem"), atomically: true, encoding: .utf8)
        #expect(throws: MerchantStore.MerchantError.self) {
            try MerchantStore(vault: vault).apply(
                try Self.document(processing, merchantIdentityFile: "with-key.pem"), baseDirectory: folder, deployment: .sandbox, on: database)
        }

        let registry = MetricsRegistry()
        let sink = LogSink(capturing: ())
        let logger = Logger(component: "decrypt", threshold: .info, sink: sink)
        let watch = CertificateWatch()
        watch.attach(metrics: registry)
        let seen = try watch.check(on: database, logger: logger)
        #expect(seen.count == 2)
        let warnings = sink.lines.filter { $0.contains("\"certificate_expiring\"") }
        #expect(warnings.count == 2)
        #expect(warnings.contains { $0.contains("\"kind\":\"payment_processing\"") && $0.contains("\"thresholdDays\":15") && $0.contains("\"daysLeft\":9") })
        #expect(warnings.contains { $0.contains("\"kind\":\"merchant_identity\"") && $0.contains("\"thresholdDays\":7") })
        let hash = try #require(applied.config.identities.first?.publicKeyHash)
        #expect(registry.value(CertificateWatch.metric, labels: ["merchant": Self.merchantId, "kind": "payment_processing", "public_key_hash": hash])
                == Double(processing.certificate.notAfter.secondsSince1970))
        #expect(registry.value(CertificateWatch.metric, labels: ["merchant": Self.merchantId, "kind": "merchant_identity"])
                == Double(merchantIdentity.certificate.notAfter.secondsSince1970))

        // The next rounds of the same day: the gauge stays, no second warning.
        try watch.check(on: database, logger: logger)
        #expect(sink.lines.filter { $0.contains("\"certificate_expiring\"") }.count == 2)
    }

    @Test func keyUsageAccumulatesPerMerchantKey() throws {
        try TestServices.resetDatabase()
        let database = try TestServices.database()
        defer { database.close() }
        let registry = MetricsRegistry()
        let counter = KeyUsageCounter()
        counter.attach(metrics: registry)
        let old: [UInt8] = Array(repeating: 1, count: 32), new: [UInt8] = Array(repeating: 2, count: 32)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for offset in 0..<3 { counter.record(merchantId: "m", publicKeyHash: old, at: start.addingTimeInterval(Double(offset))) }
        try counter.flush(on: database)
        counter.record(merchantId: "m", publicKeyHash: old, at: start.addingTimeInterval(100))
        counter.record(merchantId: "m", publicKeyHash: new, at: start.addingTimeInterval(200))
        try counter.flush(on: database)
        try counter.flush(on: database)  // nothing new: no change
        let usage = try KeyUsageCounter.usage(on: database)
        let oldHash = Data(old).base64EncodedString(), newHash = Data(new).base64EncodedString()
        #expect(usage.map(\.publicKeyHash) == [oldHash, newHash].sorted())
        let oldUsage = try #require(usage.first { $0.publicKeyHash == oldHash })
        #expect(oldUsage.tokens == 4)
        #expect(oldUsage.firstUsedAt == start && oldUsage.lastUsedAt == start.addingTimeInterval(100))
        #expect(usage.first { $0.publicKeyHash == newHash }?.tokens == 1)
        #expect(registry.value(KeyUsageCounter.metric, labels: ["merchant": "m", "public_key_hash": oldHash]) == 4)
    }
}
}
