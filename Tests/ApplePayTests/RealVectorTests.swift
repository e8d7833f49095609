@testable import ApplePay
import Crypto
import Foundation
import Testing

/// Real Apple tokens from public repositories, verified with the clock at each token's signing time.
@Suite struct RealVectorTests {
    let decryptor = ApplePayDecryptor()

    func identity(_ certificate: String, _ key: String) throws -> MerchantIdentity {
        try MerchantIdentity(certificatePEM: Fixtures.string(certificate), privateKeyPEM: Fixtures.string(key))
    }

    func decrypt(_ token: String, keyring: MerchantKeyring, at signingTime: String) throws(ApplePayError) -> DecryptedPaymentData {
        let bytes = (try? Fixtures.bytes(token)) ?? []
        return try decryptor.decrypt(ApplePayToken.parse(bytes), keyring: keyring, now: Fixtures.date(signingTime))
    }

    @Test func galaEC() throws {
        let gala = try identity("gala/certificate.pem", "gala/private_key.pem")
        #expect(Hex.encode(gala.merchantIdentifierHash) == "358da5890b9555c0a9efb84b5cd6ff04bfdcd5aabf5dc14b9872d8df51eaf439")
        let token = try ApplePayToken.parse(Fixtures.bytes("gala/token.json"))
        #expect(token.version == .ecV1)
        #expect(token.publicKeyHash == gala.publicKeyHash)
        let result = try decrypt("gala/token.json", keyring: MerchantKeyring(identities: [gala]), at: "2021-09-01T19:03:06Z")
        #expect(result.applicationPrimaryAccountNumber == "5353756319181169")
        #expect(result.applicationExpirationDate == "240930")
        #expect(result.currencyCode == "840")
        #expect(result.transactionAmount == 100)
        #expect(result.cardholderName == nil)
        #expect(result.deviceManufacturerIdentifier == "050110030273")
        #expect(result.paymentDataType == "3DSecure")
        #expect(result.paymentData.onlinePaymentCryptogram == "AMwBRjPWDnAgAA7Rls7mAoABFA==")
        #expect(result.paymentData.eciIndicator == nil)
    }

    @Test func galaIntermediateValuesMatchSource() throws {
        let gala = try identity("gala/certificate.pem", "gala/private_key.pem")
        let token = try ApplePayToken.parse(Fixtures.bytes("gala/token.json"))
        let secret = try gala.privateKey.sharedSecret(withP256UncompressedPoint: ApplePayDecryptor.ephemeralPoint(token.ephemeralPublicKey!))
        #expect(Data(secret).base64EncodedString() == "yCUzDuNYTnUnANZEdxC7+DvPmqNslB2YWYn68SBsJHU=")
        let key = ApplePayDecryptor.derivedKey(sharedSecret: secret, merchantIdentifierHash: gala.merchantIdentifierHash)
        #expect(Data(key).base64EncodedString() == "3GTXJ4RuP/IhS23hsdOw2J2ecAZmC0RasbPIFdC3nQM=")
    }

    @Test func legacy2014SeatGeek() throws {
        let seatgeek = try identity("gala/legacy-2014-seatgeek/certificate.pem", "gala/legacy-2014-seatgeek/private_key.pem")
        #expect(Hex.encode(seatgeek.merchantIdentifierHash) == "f938f4658ca2c1c9c38b8dfcb5dbb2a2245607dde2f114620e8468ef52d208ca")
        let result = try decrypt(
            "gala/legacy-2014-seatgeek/token.json", keyring: MerchantKeyring(identities: [seatgeek]), at: "2014-10-27T19:51:43Z")
        #expect(result.applicationPrimaryAccountNumber == "4109370251004320")
        #expect(result.applicationExpirationDate == "200731")
        #expect(result.currencyCode == "840")
        #expect(result.transactionAmount == 100)
        #expect(result.deviceManufacturerIdentifier == "040010030273")
        #expect(result.paymentData.onlinePaymentCryptogram == "Af9x/QwAA/DjmU65oyc1MAABAAA=")
        #expect(result.paymentData.eciIndicator == "5")
    }

    static let basisCases: [(token: String, cert: String, key: String, time: String, expiry: String, cryptogram: String)] = [
        ("basis-theory/ec/token.new.json", "basis-theory/ec/apple_pay.new.pem", "basis-theory/ec/private.new.key",
         "2023-09-13T13:49:38Z", "290228", "/x2gvNsADhptD1JXWRhcMAACAAA="),
        ("basis-theory/ec/token.old.json", "basis-theory/ec/apple_pay.old.pem", "basis-theory/ec/private.old.key",
         "2023-03-20T20:46:55Z", "231231", "/4hD3+cAE5A3VxSlUf4yMAACAAA="),
        ("basis-theory/rsa/token.json", "basis-theory/rsa/apple_pay.pem", "basis-theory/rsa/private.key",
         "2024-01-08T17:54:44Z", "290228", "/w87QS0AExt/z6EPXrU2MAACAAA="),
    ]

    @Test(arguments: 0..<3) func basisTheory(index: Int) throws {
        let vector = Self.basisCases[index]
        let merchant = try identity(vector.cert, vector.key)
        #expect(Hex.encode(merchant.merchantIdentifierHash) == "774d916d4c83f5f32b528d0d23576b18d6795be8250bad7e5998b5f1414740a1")
        let result = try decrypt(vector.token, keyring: MerchantKeyring(identities: [merchant]), at: vector.time)
        #expect(result.applicationPrimaryAccountNumber == "4784000000380075")
        #expect(result.applicationExpirationDate == vector.expiry)
        #expect(result.currencyCode == "840")
        #expect(result.transactionAmount == 100)
        #expect(result.deviceManufacturerIdentifier == "040010030273")
        #expect(result.paymentDataType == "3DSecure")
        #expect(result.paymentData.onlinePaymentCryptogram == vector.cryptogram)
        #expect(result.paymentData.eciIndicator == "7")
    }

    @Test func basisTheoryRSAUnwrapsA16ByteKey() throws {
        let merchant = try identity("basis-theory/rsa/apple_pay.pem", "basis-theory/rsa/private.key")
        #expect(merchant.keyType == .rsa)
        let token = try ApplePayToken.parse(Fixtures.bytes("basis-theory/rsa/token.json"))
        #expect(token.version == .rsaV1)
        let key = try merchant.privateKey.decryptOAEP(token.wrappedKey!)
        #expect(Hex.encode(key) == "6c8c6224208fa432a7858fb1ff59b94f")
    }

    @Test func keyRotation() throws {
        let newEC = try identity("basis-theory/ec/apple_pay.new.pem", "basis-theory/ec/private.new.key")
        let oldEC = try identity("basis-theory/ec/apple_pay.old.pem", "basis-theory/ec/private.old.key")
        let rsa = try identity("basis-theory/rsa/apple_pay.pem", "basis-theory/rsa/private.key")
        // Old token with only the new key: refused before any decryption attempt.
        expectError("unknown_merchant_key") {
            _ = try decrypt("basis-theory/ec/token.old.json", keyring: MerchantKeyring(identities: [newEC]), at: "2023-03-20T20:46:55Z")
        }
        expectError("unknown_merchant_key") {
            _ = try decrypt("basis-theory/ec/token.new.json", keyring: MerchantKeyring(identities: [rsa]), at: "2023-09-13T13:49:38Z")
        }
        // All three live at once: each token finds its own key.
        let all = MerchantKeyring(identities: [newEC, oldEC, rsa])
        for vector in Self.basisCases {
            let result = try decrypt(vector.token, keyring: all, at: vector.time)
            #expect(result.paymentData.onlinePaymentCryptogram == vector.cryptogram)
        }
    }

    @Test(arguments: [("processout/token-ec.json", "2017-02-01T18:45:06Z", ApplePayToken.Version.ecV1),
                      ("processout/token-rsa.json", "2017-02-01T21:56:53Z", .rsaV1)])
    func processoutSignatureOnly(file: String, signingTime: String, version: ApplePayToken.Version) throws {
        let token = try ApplePayToken.parse(Fixtures.bytes(file))
        #expect(token.version == version)
        #expect(token.paymentMethod?.network != nil)
        let signed = try decryptor.verify(token, now: Fixtures.date(signingTime))
        #expect(signed == Fixtures.date(signingTime))
        if version == .ecV1 {
            #expect(Data(token.publicKeyHash).base64EncodedString() == "hErQTIkV+XDB8kVuVvYI+1PUv/iIJPuFg2QF/+z1NIo=")
        }
    }

    @Test func allRealTokensVerifyAtTheirSigningTime() throws {
        let cases = [
            ("gala/token.json", "2021-09-01T19:03:06Z"), ("gala/legacy-2014-seatgeek/token.json", "2014-10-27T19:51:43Z"),
            ("basis-theory/ec/token.new.json", "2023-09-13T13:49:38Z"), ("basis-theory/ec/token.old.json", "2023-03-20T20:46:55Z"),
            ("basis-theory/rsa/token.json", "2024-01-08T17:54:44Z"), ("processout/token-ec.json", "2017-02-01T18:45:06Z"),
            ("processout/token-rsa.json", "2017-02-01T21:56:53Z"),
        ]
        for (file, time) in cases {
            let token = try ApplePayToken.parse(Fixtures.bytes(file))
            #expect(try decryptor.verify(token, now: Fixtures.date(time)) == Fixtures.date(time), "\(file)")
            // Today the signatures are far too old (and the Apple leaves expired): rejected as stale.
            expectError("signing_time_out_of_range", "\(file)") {
                try decryptor.verify(token, now: Fixtures.date(time).addingTimeInterval(301))
            }
            expectError("signing_time_out_of_range", "\(file)") {
                try decryptor.verify(token, now: Fixtures.date(time).addingTimeInterval(-61))
            }
        }
    }
}
