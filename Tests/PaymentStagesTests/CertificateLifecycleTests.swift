import Crypto
import Foundation
@testable import PaymentStages
import Pipeline
import Testing

/// Certificate expiry (what `paypipe merchant certs`, the expiry gauge and `certificate_expiring` share) and the
/// operational gauges of the breakers: pure, with certificates minted to expire soon.
@Suite struct CertificateLifecycleTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A self-signed certificate valid until `now + days`.
    static func certificate(expiringInDays days: Double) throws -> Certificate {
        let key = try PrivateKey.generateP256()
        return try CertificateBuilder(
            subjectCommonName: "merchant.com.example expiring", subjectPublicKey: key.publicKey,
            notBefore: now.addingTimeInterval(-86_400), notAfter: now.addingTimeInterval(days * 86_400), extensions: []
        ).sign(issuer: nil, issuerKey: key)
    }

    static func config(identityDays: Double, recorded: Bool, merchantIdentityDays: Double? = nil) throws -> MerchantConfig {
        let certificate = try certificate(expiringInDays: identityDays)
        let identity = MerchantConfig.IdentitySummary(
            certificatePem: try certificate.pem(), publicKeyHash: "HASH=", keyType: "ec",
            notAfter: recorded ? CertificateExpiry.iso8601(certificate.notAfter.date) : nil)
        let merchantIdentity = try merchantIdentityDays.map { days in
            let certificate = try Self.certificate(expiringInDays: days)
            return MerchantConfig.CertificateSummary(
                certificatePem: try certificate.pem(), subject: certificate.subject, notAfter: CertificateExpiry.iso8601(certificate.notAfter.date))
        }
        return MerchantConfig(identities: [identity], gateway: nil, webhook: nil, merchantIdentityCertificate: merchantIdentity)
    }

    @Test func listsEveryCertificateWithItsExpiryRecordedOrReadFromThePEM() throws {
        let recorded = CertificateExpiry.certificates(of: "m1", config: try Self.config(identityDays: 20, recorded: true, merchantIdentityDays: 400))
        #expect(recorded.map(\.kind) == [.paymentProcessing, .merchantIdentity])
        #expect(recorded.map { $0.daysLeft(at: Self.now) } == [20, 400])
        #expect(recorded[0].publicKeyHash == "HASH=" && recorded[1].publicKeyHash == nil)
        // Rows applied before notAfter was recorded: read from the stored certificate.
        let legacy = CertificateExpiry.certificates(of: "m1", config: try Self.config(identityDays: 45, recorded: false))
        #expect(legacy.map { $0.daysLeft(at: Self.now) } == [45])
    }

    @Test(arguments: [(45.0, nil), (30.0, 30), (29.5, 30), (16.0, 30), (15.0, 15), (8.0, 15), (7.0, 7), (2.0, 7), (-3.0, 7)] as [(Double, Int?)])
    func warnsFrom30DaysWithTheTightestThreshold(days: Double, threshold: Int?) throws {
        let certificate = CertificateExpiry(merchantId: "m", kind: .paymentProcessing, publicKeyHash: "H", notAfter: Self.now.addingTimeInterval(days * 86_400))
        #expect(certificate.warningThreshold(at: Self.now) == threshold)
    }

    @Test func warnsOnceADayPerCertificate() throws {
        var schedule = CertificateWarningSchedule()
        let soon = CertificateExpiry(merchantId: "m", kind: .paymentProcessing, publicKeyHash: "A", notAfter: Self.now.addingTimeInterval(10 * 86_400))
        let other = CertificateExpiry(merchantId: "m", kind: .paymentProcessing, publicKeyHash: "B", notAfter: Self.now.addingTimeInterval(5 * 86_400))
        let far = CertificateExpiry(merchantId: "m", kind: .merchantIdentity, publicKeyHash: nil, notAfter: Self.now.addingTimeInterval(90 * 86_400))
        #expect(schedule.due(soon, at: Self.now) == 15)
        #expect(schedule.due(other, at: Self.now) == 7, "each certificate has its own day")
        #expect(schedule.due(far, at: Self.now) == nil)
        #expect(schedule.due(soon, at: Self.now.addingTimeInterval(3600)) == nil, "not again within the day")
        #expect(schedule.due(soon, at: Self.now.addingTimeInterval(86_399)) == nil)
        #expect(schedule.due(soon, at: Self.now.addingTimeInterval(86_400 * 3)) == 7, "the next day, with the new threshold")
    }

    @Test func replacingAGaugeFamilyDropsSeriesNoLongerPresent() {
        let registry = MetricsRegistry()
        registry.register("g", kind: .gauge, help: "test")
        registry.replace("g", with: [["k": "a"]: 1, ["k": "b"]: 2])
        registry.replace("g", with: [["k": "b"]: 3])
        #expect(!registry.render().contains("k=\"a\""))
        #expect(registry.value("g", labels: ["k": "b"]) == 3)
    }
}
