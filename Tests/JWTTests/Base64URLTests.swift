import JWT
import Testing

@Suite struct Base64URLTests {
    /// RFC 4648 §10 vectors, with padding removed.
    @Test(arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
        ("foobar", "Zm9vYmFy"),
    ])
    func rfc4648Vectors(plain: String, encoded: String) {
        #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
        #expect(Base64URL.decode(encoded) == Array(plain.utf8))
    }

    @Test func usesTheURLSafeAlphabet() {
        // 0xFB 0xFF 0xBF is "+/+/" in standard base64.
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xFB, 0xFF, 0xBF])
        #expect(Base64URL.decode("+/+/") == nil)
    }

    @Test func allByteValuesRoundTrip() {
        let bytes = (0...255).map(UInt8.init)
        for length in 0...bytes.count {
            let slice = Array(bytes.prefix(length))
            #expect(Base64URL.decode(Base64URL.encode(slice)) == slice)
        }
    }

    @Test(arguments: [
        "Zg==",  // padding
        "Zm8=",
        "Z",  // 4n+1 characters can never be valid
        "Zm9vY",
        "Zh",  // non-zero unused bits: "Zg" is the canonical form of "f"
        "Zm9",  // canonical is Zm8
        "Zm 9v",  // whitespace
        "Zm9v\n",
        "Zm9v!",
        "ä",
    ])
    func rejectsNonCanonicalOrInvalidInput(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }
}
