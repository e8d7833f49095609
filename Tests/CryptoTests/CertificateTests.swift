import Crypto
import Foundation
import Testing

@Suite struct CertificateTests {
    @Test func appleRootFingerprintAndFields() throws {
        let root = try Certificate(pem: CryptoFixtures.string("apple-ca/AppleRootCA-G3.pem"))
        #expect(Hex.encode(root.fingerprintSHA256) == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        #expect(root.subject.contains("Apple Root CA - G3"))
        #expect(root.subjectNameDER == root.issuerNameDER)
        #expect(root.publicKey.type == .ec && root.publicKey.bits == 384)
        #expect(root.isSigned(by: root.publicKey))
        #expect(root.notBefore.date == ISO8601DateFormatter().date(from: "2014-04-30T18:19:06Z"))
        #expect(root.isValid(at: ASN1Time(ISO8601DateFormatter().date(from: "2030-01-01T00:00:00Z")!)))
        #expect(!root.isValid(at: ASN1Time(ISO8601DateFormatter().date(from: "2040-01-01T00:00:00Z")!)))
        #expect(try Certificate(der: root.derBytes).fingerprintSHA256 == root.fingerprintSHA256)
        #expect(try Certificate(pem: root.pem()).fingerprintSHA256 == root.fingerprintSHA256)
    }

    @Test func intermediateCarriesAppleMarkerAndChainsToRoot() throws {
        let root = try Certificate(pem: CryptoFixtures.string("apple-ca/AppleRootCA-G3.pem"))
        let intermediate = try Certificate(pem: CryptoFixtures.string("apple-ca/AppleAAICAG3.pem"))
        #expect(Hex.encode(intermediate.fingerprintSHA256) == "a64b099dbd73ebb036b4204e1675e8aa821637d09b849808 99104ad59d664a3b".replacingOccurrences(of: " ", with: ""))
        #expect(intermediate.hasExtension(ASN1ObjectIdentifier("1.2.840.113635.100.6.2.14")))
        #expect(!intermediate.hasExtension(ASN1ObjectIdentifier("1.2.840.113635.100.6.29")))
        #expect(intermediate.isSigned(by: root.publicKey))
        #expect(!intermediate.isSigned(by: intermediate.publicKey))
        #expect(intermediate.issuerNameDER == root.subjectNameDER)
    }

    @Test func merchantIdentifierExtensionIsADERString() throws {
        let certificate = try Certificate(pem: CryptoFixtures.string("gala/certificate.pem"))
        let value = try #require(certificate.extensionValue(ASN1ObjectIdentifier("1.2.840.113635.100.6.32")))
        let element = try DERReader.parse(value)
        #expect(element.tag == ASN1Tag.utf8String)
        #expect(String(decoding: element.content, as: UTF8.self) == "358DA5890B9555C0A9EFB84B5CD6FF04BFDCD5AABF5DC14B9872D8DF51EAF439")
    }

    /// PayU's own test CA: root → intermediate → leaf verifies; Apple's sandbox leaf does not chain to it.
    @Test func chainVerificationWithPayUTestCA() throws {
        let root = try Certificate(pem: CryptoFixtures.string("payu/chain/root.crt"))
        let intermediate = try Certificate(pem: CryptoFixtures.string("payu/chain/intermediate.crt"))
        let leaf = try Certificate(pem: CryptoFixtures.string("payu/chain/leaf.crt"))
        let badLeaf = try Certificate(pem: CryptoFixtures.string("payu/chain/leaf-bad.crt"))
        let at = ISO8601DateFormatter().date(from: "2030-01-01T00:00:00Z")!
        let chain = try CertificateChainVerifier.verify(leaf: leaf, intermediates: [intermediate], trustAnchors: [root], at: at)
        #expect(chain.map(\.fingerprintSHA256) == [leaf, intermediate, root].map(\.fingerprintSHA256))
        #expect(throws: CryptoError.self) {
            try CertificateChainVerifier.verify(leaf: badLeaf, intermediates: [intermediate], trustAnchors: [root], at: nil)
        }
        // Without the intermediate, or with the intermediate as the only anchor's stand-in, it fails too.
        #expect(throws: CryptoError.self) {
            try CertificateChainVerifier.verify(leaf: leaf, intermediates: [], trustAnchors: [root], at: at)
        }
        // Validity periods are enforced when a time is given, and skipped with nil.
        let before = ISO8601DateFormatter().date(from: "2020-01-01T00:00:00Z")!
        #expect(throws: CryptoError.self) {
            try CertificateChainVerifier.verify(leaf: leaf, intermediates: [intermediate], trustAnchors: [root], at: before)
        }
        #expect(try CertificateChainVerifier.verify(leaf: leaf, intermediates: [intermediate], trustAnchors: [root], at: nil).count == 3)
    }

    @Test func builderCreatesCustomExtensions() throws {
        let caKey = try PrivateKey.generateP256()
        let now = Date()
        let ca = try CertificateBuilder(
            subjectCommonName: "Test CA", subjectPublicKey: caKey.publicKey, notBefore: now.addingTimeInterval(-60),
            notAfter: now.addingTimeInterval(3600), extensions: [.basicConstraints(certificateAuthority: true)]
        ).sign(issuer: nil, issuerKey: caKey)
        let leafKey = try PrivateKey.generateRSA(bits: 2048)
        let marker = ASN1ObjectIdentifier("1.2.3.4.5")
        let leaf = try CertificateBuilder(
            subjectCommonName: "Leaf ü", subjectPublicKey: leafKey.publicKey, notBefore: now.addingTimeInterval(-60),
            notAfter: now.addingTimeInterval(3600), serialNumber: [0x80, 0x01],
            extensions: [CertificateExtension(marker, valueDER: DERWriter.utf8String("hello"))]
        ).sign(issuer: ca, issuerKey: caKey)
        #expect(leaf.extensionValue(marker) == DERWriter.utf8String("hello"))
        #expect(leaf.extensionValue(ASN1ObjectIdentifier("1.2.3.4.6")) == nil)
        #expect(leaf.serialNumberBytes == [0x00, 0x80, 0x01])
        #expect(leaf.issuerNameDER == ca.subjectNameDER)
        #expect(leaf.publicKey.matches(leafKey.publicKey))
        #expect(leaf.isSigned(by: caKey.publicKey))
        #expect(leaf.subject.contains("Leaf"))
        #expect(try CertificateChainVerifier.verify(leaf: leaf, intermediates: [], trustAnchors: [ca], at: now).count == 2)
        // A leaf is not a CA: nothing it signs chains.
        let grandchild = try CertificateBuilder(
            subjectCommonName: "Grandchild", subjectPublicKey: try PrivateKey.generateP256().publicKey,
            notBefore: now.addingTimeInterval(-60), notAfter: now.addingTimeInterval(3600)
        ).sign(issuer: leaf, issuerKey: leafKey)
        #expect(throws: CryptoError.self) {
            try CertificateChainVerifier.verify(leaf: grandchild, intermediates: [leaf], trustAnchors: [ca], at: now)
        }
    }

    @Test func garbageIsRejected() {
        #expect(throws: CryptoError.self) { try Certificate(der: [0x30, 0x03, 0x02, 0x01, 0x01]) }
        #expect(throws: CryptoError.self) { try Certificate(pem: "not a certificate") }
        #expect((try? Certificate.certificates(pem: "nothing"))?.isEmpty == true)
    }
}
