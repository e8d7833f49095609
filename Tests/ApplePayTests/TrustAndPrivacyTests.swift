import ApplePay
import ApplePaySandbox
import Crypto
import Foundation
import Testing

@Suite struct TrustAndPrivacyTests {
    @Test func appleRootIsPinnedByFingerprint() throws {
        let root = TrustRoot.appleRootCAG3
        #expect(Hex.encode(root.fingerprintSHA256).uppercased() == "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179")
        #expect(root.fingerprintSHA256 == TrustRoot.appleRootCAG3FingerprintSHA256)
        // The embedded copy is byte-identical to the published certificate.
        let published = try Certificate(pem: Fixtures.string("apple-ca/AppleRootCA-G3.pem"))
        #expect(published.derBytes == root.certificate.derBytes)
        // Any other certificate fails the pin.
        let other = try Fixtures.string("apple-ca/AppleAAICAG3.pem")
        expectError("certificate_invalid") {
            _ = try TrustRoot(pem: other, pinnedFingerprintSHA256: TrustRoot.appleRootCAG3FingerprintSHA256)
        }
        expectError("certificate_invalid") { _ = try TrustRoot(pem: "garbage") }
        #expect(try TrustRoot(pem: Fixtures.string("apple-ca/AppleRootCA-G3.pem"), pinnedFingerprintSHA256: TrustRoot.appleRootCAG3FingerprintSHA256)
            .fingerprintSHA256 == root.fingerprintSHA256)
        #expect(ApplePayVerifierConfiguration().trustRoot.fingerprintSHA256 == root.fingerprintSHA256)
    }

    @Test func decryptedDataNeverPrintsSecrets() throws {
        let data = DecryptedPaymentData(
            applicationPrimaryAccountNumber: "5353756319181169", applicationExpirationDate: "240930", currencyCode: "840",
            transactionAmount: 100, deviceManufacturerIdentifier: "050110030273", paymentDataType: "3DSecure",
            paymentData: .init(onlinePaymentCryptogram: "AMwBRjPWDnAgAA7Rls7mAoABFA==", eciIndicator: "5"))
        for text in ["\(data)", String(describing: data), String(reflecting: data), { var s = ""; dump(data, to: &s); return s }()] {
            #expect(!text.contains("5353756319181169"))
            #expect(!text.contains("AMwBRjPWDnAgAA7Rls7mAoABFA=="))
            #expect(text.contains("1169"))
        }
        #expect(data.masked.applicationPrimaryAccountNumber == "************1169")
        #expect(data.masked.paymentData.onlinePaymentCryptogram == "***")
        #expect(data.masked.paymentData.eciIndicator == "5")
        // Codable round trip keeps everything (for encrypted storage).
        let encoded = try JSONEncoder().encode(data)
        #expect(try JSONDecoder().decode(DecryptedPaymentData.self, from: encoded) == data)
    }

    @Test func errorMessagesCarryNoSecrets() throws {
        let pki = SandboxFixture.pki
        var request = SandboxFixture.request()
        request.pan = "4000123412341234"
        request.plaintextOverride = Array(#"{"applicationPrimaryAccountNumber":"4000123412341234","transactionAmount":"x"}"#.utf8)
        let token = try ApplePayToken.parse(pki.mintToken(request))
        do {
            _ = try SandboxFixture.decryptor.decrypt(token, keyring: SandboxFixture.keyring, now: Date())
            Issue.record("bad payload accepted")
        } catch {
            #expect(error.code == "payload_invalid")
            #expect(!error.description.contains("4000123412341234"))
        }
    }

    @Test func merchantIdentityChecks() throws {
        let gala = try Fixtures.string("gala/certificate.pem")
        let otherKey = try PrivateKey.generateP256().pkcs8PEM()
        expectError("merchant_identity_invalid") { _ = try MerchantIdentity(certificatePEM: gala, privateKeyPEM: otherKey) }
        expectError("merchant_identity_invalid") { _ = try MerchantIdentity(certificatePEM: "x", privateKeyPEM: otherKey) }
        expectError("merchant_identity_invalid") { _ = try MerchantIdentity(certificatePEM: gala, privateKeyPEM: "x") }
        // A certificate without the merchant identifier extension is refused.
        let key = try PrivateKey.generateP256()
        let bare = try SandboxPKI.issue(commonName: "no ext", key: key.publicKey, issuer: nil, signingKey: key, certificateAuthority: false, extensions: [])
        expectError("merchant_identity_invalid") { _ = try MerchantIdentity(certificate: bare, privateKey: key) }
        // The extension is parsed as a DER string: a value of the wrong type is refused too.
        let wrongType = try SandboxPKI.issue(
            commonName: "octets", key: key.publicKey, issuer: nil, signingKey: key, certificateAuthority: false,
            extensions: [CertificateExtension(ASN1ObjectIdentifier("1.2.840.113635.100.6.32"), valueDER: DERWriter.octetString(SHA256.hash([1])))])
        expectError("merchant_identity_invalid") { _ = try MerchantIdentity(certificate: wrongType, privateKey: key) }
    }

    @Test func sandboxPKIPersistsAndReloads() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-pki-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try SandboxPKI.loadOrCreate(directory: directory)
        #expect(first.createdFiles.count == 8)
        let merchant = try first.merchantCreatingIfNeeded("merchant.com.example", keyType: .ec)
        #expect(merchant.created)
        let keyPath = try #require(merchant.merchant.privateKeyPath)
        let permissions = try FileManager.default.attributesOfItem(atPath: keyPath)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        let token = try first.mintToken(SandboxFixture.request().with { $0.merchantIdentifier = "merchant.com.example" })
        // A second process-equivalent load reuses every file and decrypts the first one's token.
        let second = try SandboxPKI.loadOrCreate(directory: directory)
        #expect(second.createdFiles.isEmpty)
        #expect(second.root.certificate.fingerprintSHA256 == first.root.certificate.fingerprintSHA256)
        let again = try second.merchantCreatingIfNeeded("merchant.com.example", keyType: .ec)
        #expect(!again.created)
        let decryptor = ApplePayDecryptor(configuration: .init(trustRoot: try TrustRoot(pem: String(contentsOfFile: "\(directory)/root.cert.pem", encoding: .utf8))))
        let identity = try MerchantIdentity(
            certificatePEM: String(contentsOfFile: again.merchant.certificatePath!, encoding: .utf8),
            privateKeyPEM: String(contentsOfFile: keyPath, encoding: .utf8))
        #expect(identity.merchantIdentifierHash == SHA256.hash(Array("merchant.com.example".utf8)))
        #expect(try decryptor.decrypt(ApplePayToken.parse(token), keyring: MerchantKeyring(identities: [identity]), now: Date()).transactionAmount == 1234)
    }
}

extension SandboxMintRequest {
    func with(_ change: (inout SandboxMintRequest) -> Void) -> SandboxMintRequest {
        var copy = self
        change(&copy)
        return copy
    }
}
