import ApplePay
import ApplePaySandbox
import Crypto
import Foundation
import Synchronization
import Testing

/// Tokens minted by the sandbox PKI: the happy paths and one or more tokens per error code.
@Suite struct MintedTokenTests {
    let pki = SandboxFixture.pki
    let decryptor = SandboxFixture.decryptor
    let keyring = SandboxFixture.keyring

    func decrypt(_ token: [UInt8], now: Date = Date(), keyring: MerchantKeyring? = nil, decryptor: ApplePayDecryptor? = nil) throws -> DecryptedPaymentData {
        try (decryptor ?? self.decryptor).decrypt(ApplePayToken.parse(token), keyring: keyring ?? self.keyring, now: now)
    }

    @Test(arguments: ApplePayToken.Version.allCases)
    func roundTrip(version: ApplePayToken.Version) throws {
        var request = SandboxFixture.request(version)
        request.applicationData = Array("order-42".utf8)
        let token = try pki.mintToken(request)
        let parsed = try ApplePayToken.parse(token)
        #expect(parsed.version == version)
        #expect(parsed.applicationData == SHA256.hash(Array("order-42".utf8)))
        #expect(parsed.transactionId == Hex.encode(request.transactionId))
        #expect(parsed.paymentMethod?.displayName == "Visa 1111")
        let result = try decrypt(token)
        #expect(result.applicationPrimaryAccountNumber == "4111111111111111")
        #expect(result.applicationExpirationDate == "291231")
        #expect(result.currencyCode == "978")
        #expect(result.transactionAmount == 1234)
        #expect(result.paymentDataType == "3DSecure")
        #expect(result.paymentData.onlinePaymentCryptogram == "AgAAAAAABk4DWZ4C28yUQAAAAAA=")
        #expect(result.paymentData.eciIndicator == "7")
    }

    @Test func convenienceMintMatchesTheBrief() throws {
        let token = try pki.mintToken(
            version: .ecV1, merchantIdentifier: SandboxFixture.merchantIdentifier, amount: 500, currencyNumeric: "840",
            pan: "5555555555554444", expiry: "300131", cryptogram: "AAAA", eci: nil, signingTime: Date(), applicationData: nil)
        let result = try decrypt(token)
        #expect(result.transactionAmount == 500)
        #expect(result.paymentData.eciIndicator == nil)
    }

    @Test func rsaTokenSignedByAnECLeafIsAccepted() throws {
        // The signature scheme follows the leaf key, not the token version.
        var request = SandboxFixture.request(.rsaV1)
        request.signer = pki.ecLeaf
        #expect(try decrypt(pki.mintToken(request)).transactionAmount == 1234)
    }

    // MARK: malformed_token / unsupported_version

    @Test(arguments: ["", "{", "[]", "42", "{\"version\":\"EC_v1\"}", "\"not a token\""])
    func malformedJSON(text: String) {
        expectError("malformed_token") { _ = try ApplePayToken.parse(Array(text.utf8)) }
    }

    @Test func malformedBase64AndHex() throws {
        let token = try pki.mintToken(SandboxFixture.request())
        let cases: [[UInt8]] = [
            SandboxFixture.edit(token) { $0["data"] = "!!not base64!!" },
            SandboxFixture.edit(token) { $0["signature"] = "%%%" },
            SandboxFixture.edit(token) { $0["header"] = nil },
            SandboxFixture.edit(token, header: true) { $0["transactionId"] = "xyz" },
            SandboxFixture.edit(token, header: true) { $0["publicKeyHash"] = "AAAA" },
            SandboxFixture.edit(token, header: true) { $0["ephemeralPublicKey"] = nil },
            SandboxFixture.edit(token, header: true) { $0["applicationData"] = "zz" },
        ]
        for (index, bad) in cases.enumerated() {
            expectError("malformed_token", "case \(index)") { _ = try ApplePayToken.parse(bad) }
        }
        // A well-formed base64 key that is not a P-256 point: the signature (which covers it) is checked first.
        let badKey = SandboxFixture.edit(token, header: true) { $0["ephemeralPublicKey"] = Data(repeating: 7, count: 91).base64EncodedString() }
        expectError("signature_invalid") { _ = try decrypt(badKey) }
    }

    @Test func unsupportedVersion() throws {
        let token = SandboxFixture.edit(try pki.mintToken(SandboxFixture.request())) { $0["version"] = "EC_v2" }
        expectError("unsupported_version") { _ = try ApplePayToken.parse(token) }
    }

    // MARK: signature_invalid

    @Test func corruptedSignerSignature() throws {
        var request = SandboxFixture.request()
        request.corruptSignature = true
        expectError("signature_invalid") { _ = try decrypt(pki.mintToken(request)) }
    }

    @Test func tamperedDataBreaksTheMessageDigest() throws {
        let token = try pki.mintToken(SandboxFixture.request())
        let tampered = SandboxFixture.edit(token) {
            var data = Data(base64Encoded: $0["data"] as! String)!
            data[0] ^= 0x80
            $0["data"] = data.base64EncodedString()
        }
        expectError("signature_invalid") { _ = try decrypt(tampered) }
        // A swapped ephemeral key (valid point) is also covered by the signature.
        let swapped = SandboxFixture.edit(token, header: true) {
            $0["ephemeralPublicKey"] = Data(try! PrivateKey.generateP256().publicKey.subjectPublicKeyInfoDER()).base64EncodedString()
        }
        expectError("signature_invalid") { _ = try decrypt(swapped) }
    }

    @Test func applicationDataIsSigned() throws {
        var request = SandboxFixture.request()
        request.applicationData = Array("basket".utf8)
        let token = try pki.mintToken(request)
        let changed = SandboxFixture.edit(token, header: true) { $0["applicationData"] = Hex.encode(SHA256.hash(Array("other".utf8))) }
        expectError("signature_invalid") { _ = try decrypt(changed) }
        let dropped = SandboxFixture.edit(token, header: true) { $0["applicationData"] = nil }
        expectError("signature_invalid") { _ = try decrypt(dropped) }
    }

    @Test func missingSigningTime() throws {
        var request = SandboxFixture.request()
        request.omitSigningTime = true
        expectError("signature_invalid") { _ = try decrypt(pki.mintToken(request)) }
    }

    @Test func declaredAlgorithmMustFollowTheLeafKey() throws {
        var request = SandboxFixture.request()
        request.declaredSignatureAlgorithm = .sha256WithRSAEncryption
        expectError("signature_invalid") { _ = try decrypt(pki.mintToken(request)) }
    }

    @Test func garbageSignature() throws {
        let token = SandboxFixture.edit(try pki.mintToken(SandboxFixture.request())) { $0["signature"] = Data(repeating: 0x30, count: 40).base64EncodedString() }
        expectError("signature_invalid") { _ = try decrypt(token) }
    }

    // MARK: certificate_invalid

    @Test func wrongTrustRoot() throws {
        let token = try pki.mintToken(SandboxFixture.request())
        let appleRooted = ApplePayDecryptor()
        expectError("certificate_invalid") { _ = try decrypt(token, decryptor: appleRooted) }
        let other = ApplePayDecryptor(configuration: .init(trustRoot: TrustRoot(certificate: try SandboxPKI.issue(
            commonName: "Other Root", key: try PrivateKey.generateP256().publicKey, issuer: nil,
            signingKey: try PrivateKey.generateP256(), certificateAuthority: true, extensions: []))))
        expectError("certificate_invalid") { _ = try decrypt(token, decryptor: other) }
    }

    @Test func rootCarriedInTheTokenIsNotTrusted() throws {
        // A forged chain complete with its own root inside the token, verified against the real sandbox root.
        let forged = try SandboxPKI.generate()
        var request = SandboxFixture.request()
        request.signer = forged.ecLeaf
        request.merchant = try pki.merchant(SandboxFixture.merchantIdentifier, keyType: .ec)
        request.embeddedCertificates = [forged.ecLeaf.certificate, forged.intermediate.certificate, forged.root.certificate]
        expectError("certificate_invalid") { _ = try decrypt(pki.mintToken(request)) }
    }

    @Test func leafWithoutMarkerOID() throws {
        let key = try PrivateKey.generateP256()
        let leaf = try SandboxPKI.issue(commonName: "no marker", key: key.publicKey, issuer: pki.intermediate, certificateAuthority: false, extensions: [])
        var request = SandboxFixture.request()
        request.signer = SandboxCertifiedKey(certificate: leaf, privateKey: key)
        expectError("certificate_invalid") { _ = try decrypt(pki.mintToken(request)) }
    }

    @Test func intermediateWithoutMarkerOID() throws {
        let intermediateKey = try PrivateKey.generateP256()
        let intermediate = SandboxCertifiedKey(
            certificate: try SandboxPKI.issue(commonName: "unmarked CA", key: intermediateKey.publicKey, issuer: pki.root,
                                              certificateAuthority: true, extensions: []),
            privateKey: intermediateKey)
        let leafKey = try PrivateKey.generateP256()
        let leaf = try SandboxPKI.issue(
            commonName: "leaf", key: leafKey.publicKey, issuer: intermediate, certificateAuthority: false,
            extensions: [CertificateExtension(ASN1ObjectIdentifier("1.2.840.113635.100.6.29"), valueDER: DERWriter.null)])
        var request = SandboxFixture.request()
        request.signer = SandboxCertifiedKey(certificate: leaf, privateKey: leafKey)
        request.embeddedCertificates = [leaf, intermediate.certificate]
        expectError("certificate_invalid") { _ = try decrypt(pki.mintToken(request)) }
    }

    @Test func signerCertificateMissing() throws {
        var request = SandboxFixture.request()
        request.embeddedCertificates = [pki.intermediate.certificate]
        expectError("certificate_invalid") { _ = try decrypt(pki.mintToken(request)) }
    }

    @Test func chainNotValidAtSigningTime() throws {
        // Sandbox certificates start one day ago; a token signed two days ago (clock set to then) predates them.
        let twoDaysAgo = Date().addingTimeInterval(-2 * 86_400)
        let token = try pki.mintToken(SandboxFixture.request(signingTime: twoDaysAgo))
        expectError("certificate_invalid") { _ = try decrypt(token, now: twoDaysAgo) }
    }

    // MARK: signing_time_out_of_range

    @Test func signingTimeWindow() throws {
        let now = Date()
        let cases: [(TimeInterval, String?)] = [(-301, "signing_time_out_of_range"), (-299, nil), (59, nil), (61, "signing_time_out_of_range")]
        for (offset, code) in cases {
            let token = try pki.mintToken(SandboxFixture.request(signingTime: now.addingTimeInterval(offset)))
            if let code {
                expectError(code, "offset \(offset)") { _ = try decrypt(token, now: now) }
            } else {
                #expect(try decrypt(token, now: now).transactionAmount == 1234, "offset \(offset)")
            }
        }
        // The window is configurable.
        let lenient = ApplePayDecryptor(configuration: .init(trustRoot: pki.trustRoot, signingTimeMaxAge: 3600))
        let old = try pki.mintToken(SandboxFixture.request(signingTime: now.addingTimeInterval(-1800)))
        #expect(try decrypt(old, now: now, decryptor: lenient).currencyCode == "978")
    }

    // MARK: unknown_merchant_key / decryption_failed / payload_invalid

    @Test func unknownPublicKeyHash() throws {
        let token = try pki.mintToken(SandboxFixture.request())
        let stranger = MerchantKeyring(identities: [try pki.merchant("merchant.com.someone.else", keyType: .ec).identity])
        expectError("unknown_merchant_key") { _ = try decrypt(token, keyring: stranger) }
        expectError("unknown_merchant_key") { _ = try decrypt(token, keyring: MerchantKeyring(identities: [])) }
    }

    @Test(arguments: ApplePayToken.Version.allCases)
    func tamperedCiphertext(version: ApplePayToken.Version) throws {
        var request = SandboxFixture.request(version)
        request.corruptCiphertext = true
        expectError("decryption_failed") { _ = try decrypt(pki.mintToken(request)) }
    }

    @Test func wrongMerchantIdentifierHashFailsDecryption() throws {
        // Same key, different merchant id in the certificate: the KDF input differs, so GCM must fail.
        let real = try pki.merchant(SandboxFixture.merchantIdentifier, keyType: .ec)
        let impostorCertificate = try SandboxPKI.issue(
            commonName: "impostor", key: real.identity.certificate.publicKey, issuer: pki.root, certificateAuthority: false,
            extensions: [CertificateExtension(ASN1ObjectIdentifier("1.2.840.113635.100.6.32"),
                                              valueDER: DERWriter.utf8String(Hex.encode(SHA256.hash(Array("merchant.other".utf8)))))])
        let impostor = try MerchantIdentity(certificate: impostorCertificate, privateKey: real.identity.privateKey)
        let token = try pki.mintToken(SandboxFixture.request())
        expectError("decryption_failed") { _ = try decrypt(token, keyring: MerchantKeyring(identities: [impostor])) }
    }

    @Test(arguments: ["not json", "{}", "{\"applicationPrimaryAccountNumber\":\"4111\"}",
                      #"{"applicationPrimaryAccountNumber":"4111111111111111","applicationExpirationDate":"291231","currencyCode":"978","transactionAmount":"12","deviceManufacturerIdentifier":"04","paymentDataType":"3DSecure","paymentData":{"onlinePaymentCryptogram":"AA=="}}"#,
                      #"{"applicationPrimaryAccountNumber":"4111111111111111","applicationExpirationDate":"291231","currencyCode":"978","transactionAmount":12,"deviceManufacturerIdentifier":"04","paymentDataType":"3DSecure","paymentData":{}}"#])
    func badPayload(plaintext: String) throws {
        var request = SandboxFixture.request()
        request.plaintextOverride = Array(plaintext.utf8)
        expectError("payload_invalid") { _ = try decrypt(pki.mintToken(request)) }
    }

    @Test func payloadKeepsOptionalFieldsAndIgnoresUnknownOnes() throws {
        var request = SandboxFixture.request()
        request.plaintextOverride = Array(#"""
        {"applicationPrimaryAccountNumber":"4111111111111111","applicationExpirationDate":"291231","currencyCode":"036",
         "transactionAmount":99,"cardholderName":"J Doe","deviceManufacturerIdentifier":"040010030273","paymentDataType":"EMV",
         "paymentData":{"emvData":"AQID","encryptedPINData":"ABCD"},"futureField":{"x":1},
         "authenticationResponses":[{"merchantIdentifier":"m1","authenticationData":"c2VjcmV0","transactionAmount":50}],
         "merchantTokenIdentifier":"DNITHE000000000000000001",
         "merchantTokenMetadata":{"cardArt":[{"url":"https://x/y.png","width":100,"height":50}],"cardMetadata":{"expirationDate":"2030-01","fpanSuffix":"1234"}}}
        """#.utf8)
        let result = try decrypt(pki.mintToken(request))
        #expect(result.currencyCode == "036")
        #expect(result.cardholderName == "J Doe")
        #expect(result.paymentData.emvData == "AQID")
        #expect(result.paymentData.encryptedPINData == "ABCD")
        #expect(result.authenticationResponses?.first?.transactionAmount == 50)
        #expect(result.merchantTokenIdentifier == "DNITHE000000000000000001")
        #expect(result.merchantTokenMetadata?.cardMetadata?.fpanSuffix == "1234")
        #expect(result.merchantTokenMetadata?.cardArt?.first?.width == 100)
        let masked = result.masked
        #expect(masked.applicationPrimaryAccountNumber == "************1111")
        #expect(masked.paymentData.emvData == "***")
        #expect(masked.authenticationResponses?.first?.authenticationData == "***")
    }

    // MARK: Property: leading-zero shared secrets

    @Test func thousandFreshTokensAllDecrypt() throws {
        let merchant = try pki.merchant(SandboxFixture.merchantIdentifier, keyType: .ec)
        var leadingZeroSecrets = 0
        for index in 0..<1000 {
            let token = try pki.mintToken(SandboxFixture.request())
            let parsed = try ApplePayToken.parse(token)
            let ephemeral = try PublicKey(subjectPublicKeyInfoDER: parsed.ephemeralPublicKey!)
            let secret = try merchant.identity.privateKey.sharedSecret(with: ephemeral)
            #expect(secret.count == 32)
            if secret[0] == 0 { leadingZeroSecrets += 1 }
            let result = try decryptor.decrypt(parsed, keyring: keyring, now: Date())
            #expect(result.transactionAmount == 1234, "token \(index)")
        }
        // Expected ~4 of 1000; the point is that those decrypt too (asserted above).
        print("leading-zero ECDH secrets among 1000 tokens: \(leadingZeroSecrets)")
        #expect(decryptor.cachedChainCount >= 1)
    }

    @Test func concurrentDecryptionSharesOneDecryptor() throws {
        let tokens = try (0..<64).map { _ in try ApplePayToken.parse(pki.mintToken(SandboxFixture.request())) }
        let fresh = ApplePayDecryptor(configuration: .init(trustRoot: pki.trustRoot))
        let keyring = self.keyring
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 256) { index in
            if (try? fresh.decrypt(tokens[index % tokens.count], keyring: keyring, now: Date())) == nil {
                failures.withLock { $0 += 1 }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        #expect(fresh.cachedChainCount == 1)
    }
}
