import Crypto
import Testing

/// RFC 4231 §4 test vectors for HMAC-SHA-256/384/512.
@Suite struct HMACTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let name: String
        let key: [UInt8]
        let data: [UInt8]
        let sha256: String
        let sha384: String
        let sha512: String
        /// Test case 5 publishes only the first 128 bits of each code.
        var truncatedTo: Int? = nil

        var testDescription: String { name }
    }

    static let largeKey = [UInt8](repeating: 0xAA, count: 131)

    static let vectors: [Vector] = [
        Vector(
            name: "RFC 4231 case 1", key: [UInt8](repeating: 0x0B, count: 20), data: Array("Hi There".utf8),
            sha256: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
            sha384: "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59cfaea9ea9076ede7f4af152e8b2fa9cb6",
            sha512: "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"),
        Vector(
            name: "RFC 4231 case 2", key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8),
            sha256: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            sha384: "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649",
            sha512: "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"),
        Vector(
            name: "RFC 4231 case 3", key: [UInt8](repeating: 0xAA, count: 20), data: [UInt8](repeating: 0xDD, count: 50),
            sha256: "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
            sha384: "88062608d3e6ad8a0aa2ace014c8a86f0aa635d947ac9febe83ef4e55966144b2a5ab39dc13814b94e3ab6e101a34f27",
            sha512: "fa73b0089d56a284efb0f0756c890be9b1b5dbdd8ee81a3655f83e33b2279d39bf3e848279a722c806b485a47e67c807b946a337bee8942674278859e13292fb"),
        Vector(
            name: "RFC 4231 case 4", key: Array(1...25), data: [UInt8](repeating: 0xCD, count: 50),
            sha256: "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
            sha384: "3e8a69b7783c25851933ab6290af6ca77a9981480850009cc5577c6e1f573b4e6801dd23c4a7d679ccf8a386c674cffb",
            sha512: "b0ba465637458c6990e5a8c5f61d4af7e576d97ff94b872de76f8050361ee3dba91ca5c11aa25eb4d679275cc5788063a5f19741120c4f2de2adebeb10a298dd"),
        Vector(
            name: "RFC 4231 case 5 (truncated)", key: [UInt8](repeating: 0x0C, count: 20),
            data: Array("Test With Truncation".utf8),
            sha256: "a3b6167473100ee06e0c796c2955552b",
            sha384: "3abf34c3503b2a23a46efc619baef897",
            sha512: "415fad6271580a531d4179bc891d87a6",
            truncatedTo: 16),
        Vector(
            name: "RFC 4231 case 6", key: largeKey,
            data: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
            sha256: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            sha384: "4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c60c2ef6ab4030fe8296248df163f44952",
            sha512: "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f3526b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598"),
        Vector(
            name: "RFC 4231 case 7", key: largeKey,
            data: Array(
                "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm."
                    .utf8),
            sha256: "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
            sha384: "6617178e941f020d351e2f254e8fd32c602420feb0b8fb9adccebb82461e99c5a678cc31e799176d3860e6110c46523e",
            sha512: "e37b6a775dc87dbaa4dfa9f96e5e3ffddebd71f8867289865df5a32d20cdc944b6022cac3c4982b10d5eeb55c3e4de15134676fb6de0446065c97440fa8c6a58"),
    ]

    @Test(arguments: vectors)
    func rfc4231(vector: Vector) {
        for (algorithm, expected) in [(HMACAlgorithm.sha256, vector.sha256), (.sha384, vector.sha384), (.sha512, vector.sha512)] {
            let code = HMAC.authenticationCode(algorithm, key: vector.key, message: vector.data)
            #expect(code.count == algorithm.outputLength)
            #expect(hexString(code.prefix(vector.truncatedTo ?? code.count)) == expected, "\(algorithm)")
        }
    }

    @Test func emptyKeyAndMessage() {
        // HMAC-SHA256("", ""), cross-checked with Python's hmac module.
        #expect(hexString(HMAC.authenticationCode(.sha256, key: [], message: []))
            == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    @Test func constantTimeComparison() {
        let code = HMAC.authenticationCode(.sha256, key: Array("k".utf8), message: Array("m".utf8))
        #expect(HMAC.isEqualConstantTime(code, code))
        #expect(HMAC.isEqualConstantTime([], []))
        var flippedLast = code
        flippedLast[31] ^= 0x01
        #expect(!HMAC.isEqualConstantTime(code, flippedLast))
        var flippedFirst = code
        flippedFirst[0] ^= 0x80
        #expect(!HMAC.isEqualConstantTime(code, flippedFirst))
        #expect(!HMAC.isEqualConstantTime(code, Array(code.prefix(31))))
        #expect(!HMAC.isEqualConstantTime(code, []))
    }

    private func hexString(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
