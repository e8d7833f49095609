import Crypto
import Foundation
import Testing

@Suite struct PrimitiveTests {
    @Test func sha256KnownAnswers() {
        #expect(Hex.encode(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Hex.encode(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hash(parts: [Array("a".utf8), Array("bc".utf8)]) == SHA256.hash(Array("abc".utf8)))
        #expect(SHA256.hash(Array("xabcx".utf8)[1..<4]) == SHA256.hash(Array("abc".utf8)))
    }

    @Test func randomBytes() {
        let a = SecureRandom.bytes(count: 32), b = SecureRandom.bytes(count: 32)
        #expect(a.count == 32 && a != b)
        #expect(SecureRandom.bytes(count: 0).isEmpty)
    }

    /// NIST GCM test vector (gcmEncryptExtIV256, Count 0 with a 96-bit IV and 128-bit plaintext).
    @Test func aesGCMKnownAnswer() throws {
        let key = Hex.decode("31bdadd96698c204aa9ce1448ea94ae1fb4a9a0b3c9d773b51bb1822666b8f22")!
        let iv = Hex.decode("0d18e06c7c725ac9e362e1ce")!
        let plaintext = Hex.decode("2db5168e932556f8089a0622981d017d")!
        let sealed = try AESGCM.seal(key: key, nonce: iv, plaintext: plaintext)
        #expect(Hex.encode(sealed.ciphertext) == "fa4362189661d163fcd6a56d8bf0405a")
        #expect(Hex.encode(sealed.tag) == "d636ac1bbedd5cc3ee727dc2ab4a9489")
        #expect(try AESGCM.open(key: key, nonce: iv, ciphertext: sealed.ciphertext, tag: sealed.tag) == plaintext)
    }

    @Test(arguments: [16, 32]) func aesGCMSixteenByteZeroIVAndAAD(keyLength: Int) throws {
        let key = SecureRandom.bytes(count: keyLength)
        let iv = [UInt8](repeating: 0, count: 16)
        let message = Array("card data".utf8)
        let sealed = try AESGCM.seal(key: key, nonce: iv, plaintext: message, aad: Array("payment-1".utf8))
        #expect(try AESGCM.open(key: key, nonce: iv, ciphertext: sealed.ciphertext, tag: sealed.tag, aad: Array("payment-1".utf8)) == message)
        #expect(throws: CryptoError.authenticationFailed) {
            try AESGCM.open(key: key, nonce: iv, ciphertext: sealed.ciphertext, tag: sealed.tag, aad: Array("payment-2".utf8))
        }
        var tampered = sealed.ciphertext
        tampered[0] ^= 1
        #expect(throws: CryptoError.authenticationFailed) {
            try AESGCM.open(key: key, nonce: iv, ciphertext: tampered, tag: sealed.tag, aad: Array("payment-1".utf8))
        }
        #expect(throws: CryptoError.authenticationFailed) { try AESGCM.open(key: key, nonce: iv, combined: [1, 2, 3]) }
        #expect(throws: CryptoError.self) { try AESGCM.seal(key: [1, 2, 3], nonce: iv, plaintext: message) }
    }

    @Test func aesGCMRandomNonceForDataAtRest() throws {
        let key = SecureRandom.bytes(count: 32)
        let nonce = AESGCM.randomNonce()
        #expect(nonce.count == 12)
        let sealed = try AESGCM.seal(key: key, nonce: nonce, plaintext: [UInt8](), aad: [9])
        #expect(sealed.ciphertext.isEmpty && sealed.tag.count == 16)
        #expect(try AESGCM.open(key: key, nonce: nonce, ciphertext: sealed.ciphertext, tag: sealed.tag, aad: [9]).isEmpty)
    }

    @Test func hexRoundTrip() {
        #expect(Hex.encode([0x00, 0xAB, 0xFF]) == "00abff")
        #expect(Hex.decode("00ABff") == [0x00, 0xAB, 0xFF])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }
}
