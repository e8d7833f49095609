import Crypto
import Foundation
import Testing

@Suite struct KeyTests {
    /// PayU-EMEA/apple-pay step vector: merchant key + ephemeral key → shared secret.
    @Test func ecdhMatchesPayUVector() throws {
        let ecdh = try CryptoFixtures.payu()["ecdh"] as! [String: String]
        let merchant = try PrivateKey(pem: ecdh["merchant_private_key_pem"]!)
        let ephemeral = try PublicKey(pem: ecdh["ephemeral_public_key_pem"]!)
        #expect(merchant.type == .ec && merchant.curveName == "prime256v1" && merchant.bits == 256)
        #expect(Hex.encode(try merchant.sharedSecret(with: ephemeral)) == ecdh["shared_secret_hex"])
        // Same key through the SPKI and raw-point constructors.
        let spki = try ephemeral.subjectPublicKeyInfoDER()
        #expect(try PublicKey(subjectPublicKeyInfoDER: spki).matches(ephemeral))
        #expect(try PublicKey(p256UncompressedPoint: spki.suffix(65)).matches(ephemeral))
    }

    @Test func ecdhSecretsAreAlwaysThirtyTwoBytes() throws {
        let a = try PrivateKey.generateP256()
        var leadingZeros = 0
        for _ in 0..<600 {
            let b = try PrivateKey.generateP256()
            let ab = try a.sharedSecret(with: b.publicKey)
            #expect(ab.count == 32)
            #expect(ab == (try b.sharedSecret(with: a.publicKey)))
            if ab[0] == 0 { leadingZeros += 1 }
        }
        print("shared secrets with a leading zero byte: \(leadingZeros) of 600")
    }

    @Test func pointsOffTheCurveAreRejected() throws {
        let point = try PrivateKey.generateP256().publicKey.subjectPublicKeyInfoDER().suffix(65)
        var bad = Array(point)
        bad[64] ^= 0x01
        #expect(throws: CryptoError.self) { try PublicKey(p256UncompressedPoint: bad[...]) }
        #expect(throws: CryptoError.self) { try PublicKey(p256UncompressedPoint: point.dropLast()) }
        #expect(throws: CryptoError.self) { try PublicKey(subjectPublicKeyInfoDER: [0x30, 0x00]) }
    }

    @Test func ecdsaSignVerify() throws {
        let key = try PrivateKey.generateP256()
        let message = Array("signed attributes".utf8)
        let signature = try key.sign(message: message, algorithm: .ecdsaSHA256)
        #expect(key.publicKey.verify(signature: signature, message: message, algorithm: .ecdsaSHA256))
        #expect(!key.publicKey.verify(signature: signature, message: message + [0], algorithm: .ecdsaSHA256))
        #expect(!key.publicKey.verify(signature: signature, message: message, algorithm: .rsaPKCS1SHA256))
        #expect(!key.publicKey.verify(signature: [0x30, 0x00], message: message, algorithm: .ecdsaSHA256))
        #expect(throws: CryptoError.self) { try key.sign(message: message, algorithm: .rsaPKCS1SHA256) }
    }

    /// PayU vector: the CMS signed attributes of an Apple sandbox token, signed by the sandbox leaf.
    @Test func cmsSignerSignatureVector() throws {
        let vector = try CryptoFixtures.payu()["cms_signer_signature"] as! [String: String]
        let key = try PublicKey(pem: vector["leaf_public_key_pem"]!)
        let attributes = CryptoFixtures.base64(vector["signed_attributes_der_b64"]!)
        let signature = CryptoFixtures.base64(vector["ecdsa_sha256_signature_der_b64"]!)
        #expect(attributes.first == ASN1Tag.set)
        #expect(key.verify(signature: signature, message: attributes, algorithm: .ecdsaSHA256))
        #expect(!key.verify(signature: signature, message: Array(attributes.dropLast()), algorithm: .ecdsaSHA256))
    }

    @Test func rsaOAEPAndPKCS1() throws {
        let key = try PrivateKey.generateRSA(bits: 2048)
        #expect(key.type == .rsa && key.bits == 2048 && key.curveName == nil)
        let secret = SecureRandom.bytes(count: 16)
        let wrapped = try key.publicKey.encryptOAEP(secret)
        #expect(wrapped.count == 256)
        #expect(try key.decryptOAEP(wrapped) == secret)
        var corrupted = wrapped
        corrupted[10] ^= 1
        #expect(throws: CryptoError.authenticationFailed) { try key.decryptOAEP(corrupted) }
        let signature = try key.sign(message: [1, 2, 3], algorithm: .rsaPKCS1SHA256)
        #expect(key.publicKey.verify(signature: signature, message: [1, 2, 3], algorithm: .rsaPKCS1SHA256))
        #expect(!key.publicKey.verify(signature: signature, message: [1, 2, 4], algorithm: .rsaPKCS1SHA256))
    }

    @Test func pemRoundTripAndMatching() throws {
        let key = try PrivateKey.generateP256()
        let reloaded = try PrivateKey(pem: key.pkcs8PEM())
        #expect(reloaded.publicKey.matches(key.publicKey))
        #expect(!reloaded.publicKey.matches(try PrivateKey.generateP256().publicKey))
        #expect(throws: CryptoError.self) { try PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
    }
}
