@testable import ApplePay
import Crypto
import Foundation
import Testing

/// PayU-EMEA/apple-pay step vectors: ECDH → KDF → AES-256-GCM with a 16-byte zero IV, chained end to end.
@Suite struct StepVectorTests {
    func payu() throws -> [String: [String: String]] {
        let object = try Fixtures.json("payu/expected.json")
        var result: [String: [String: String]] = [:]
        for key in ["ecdh", "kdf", "aes_gcm"] {
            result[key] = (object[key] as! [String: Any]).compactMapValues { $0 as? String }
        }
        return result
    }

    @Test func ecdhKdfAndGCMChain() throws {
        let vector = try payu()
        let merchant = try PrivateKey(pem: vector["ecdh"]!["merchant_private_key_pem"]!)
        let ephemeralSPKI = try PublicKey(pem: vector["ecdh"]!["ephemeral_public_key_pem"]!).subjectPublicKeyInfoDER()
        let secret = try merchant.sharedSecret(withP256UncompressedPoint: ApplePayDecryptor.ephemeralPoint(ephemeralSPKI))
        #expect(Hex.encode(secret) == vector["ecdh"]!["shared_secret_hex"])
        let merchantIdHash = Hex.decode(vector["kdf"]!["merchant_id_hash_hex"]!)!
        let key = ApplePayDecryptor.derivedKey(sharedSecret: secret, merchantIdentifierHash: merchantIdHash)
        #expect(Data(key).base64EncodedString() == vector["kdf"]!["symmetric_key_b64"])
        // The KDF's fixed info layout matches the source's kdfInfo bytes.
        let info = Data(base64Encoded: vector["kdf"]!["kdf_info_b64"]!)!
        #expect(Array(info) == [0x0D] + Array("id-aes256-GCM".utf8) + Array("Apple".utf8) + merchantIdHash)
        let combined = Array(Data(base64Encoded: vector["aes_gcm"]!["ciphertext_with_tag_b64"]!)!)
        let plaintext = try AESGCM.open(key: key, nonce: [UInt8](repeating: 0, count: 16), combined: combined)
        #expect(String(decoding: plaintext, as: UTF8.self) == vector["aes_gcm"]!["plaintext"])
        let payload = try DecryptedPaymentData.decode(plaintext)
        #expect(payload.applicationPrimaryAccountNumber == "4818528840010767")
        #expect(payload.currencyCode == "643" && payload.transactionAmount == 1000)
        #expect(payload.paymentData.eciIndicator == "7")
        // Source negative: "invalid message" as ciphertext.
        #expect(throws: CryptoError.authenticationFailed) {
            try AESGCM.open(key: key, nonce: [UInt8](repeating: 0, count: 16), combined: Array("invalid message".utf8))
        }
    }
}
