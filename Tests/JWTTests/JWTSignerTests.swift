import Foundation
import JWT
import Testing

@Suite struct JWTSignerTests {
    /// RFC 7515 Appendix A.1: HS256 over a header and payload containing CR LF, with the RFC's JWK key.
    static let rfcHeader = Array("{\"typ\":\"JWT\",\r\n \"alg\":\"HS256\"}".utf8)
    static let rfcPayload = Array("{\"iss\":\"joe\",\r\n \"exp\":1300819380,\r\n \"http://example.com/is_root\":true}".utf8)
    static let rfcKey = Base64URL.decode(
        "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow")!
    static let rfcToken =
        "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"

    @Test func rfc7515AppendixA1Sign() throws {
        let header = try JWTHeader(json: Self.rfcHeader)
        #expect(header.algorithm == .hs256)
        #expect(header.type == "JWT")
        let signer = JWTSigner(header: header, key: Self.rfcKey)
        #expect(signer.sign(payload: Self.rfcPayload) == Self.rfcToken)
    }

    @Test func rfc7515AppendixA1Verify() throws {
        // exp is 2011-03-22T18:43:00Z: verify at a time just before it.
        let verifier = JWTVerifier(key: Self.rfcKey, now: { Date(timeIntervalSince1970: 1_300_819_000) })
        let verified = try verifier.verify(Self.rfcToken)
        #expect(verified.payload == Self.rfcPayload)
        #expect(verified.header.json == Self.rfcHeader)
        #expect(verified.issuer == "joe")
        #expect(verified.claims["http://example.com/is_root"] == .bool(true))
        // …and after it, with the default 60 s skew.
        let late = JWTVerifier(key: Self.rfcKey, now: { Date(timeIntervalSince1970: 1_300_819_380 + 61) })
        #expect(throws: JWTError.expirationPassed(secondsAgo: 61)) { try late.verify(Self.rfcToken) }
    }

    @Test func trustPaymentsVectorSignsByteForByte() {
        let signer = JWTSigner(algorithm: .hs256, key: TestClaims.trustPaymentsSecret)
        #expect(signer.sign(TestClaims.trustPaymentsClaims) == TestClaims.trustPaymentsToken)
    }

    @Test func trustPaymentsVectorVerifies() throws {
        let verifier = JWTVerifier(
            key: TestClaims.trustPaymentsSecret, maxAge: 15 * 60,
            now: { Date(timeIntervalSince1970: 1_735_689_600 + 60) })
        let verified = try verifier.verify(TestClaims.trustPaymentsToken)
        #expect(verified.claims == TestClaims.trustPaymentsClaims)
        #expect(verified.payload == TestClaims.trustPaymentsClaims.serialized())
        #expect(verified.issuedAt == 1_735_689_600)
        #expect(verified.claims["payload"]?["requesttypedescriptions"]?[1]?.stringValue == "AUTH")
    }

    @Test(arguments: [JWTAlgorithm.hs256, .hs384, .hs512])
    func roundTrip(algorithm: JWTAlgorithm) throws {
        let key = Array("a-sufficiently-long-secret-key-for-\(algorithm.rawValue)-0123456789abcdef".utf8)
        let token = JWTSigner(algorithm: algorithm, key: key).sign(TestClaims.trustPaymentsClaims)
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        #expect(Base64URL.decode(parts[0]) == Array(#"{"alg":"\#(algorithm.rawValue)","typ":"JWT"}"#.utf8))
        #expect(Base64URL.decode(parts[2])?.count == algorithm.hmacAlgorithm.outputLength)

        let verifier = JWTVerifier(key: key, algorithms: [algorithm], now: { Date(timeIntervalSince1970: 1_735_689_600) })
        #expect(try verifier.verify(token).claims == TestClaims.trustPaymentsClaims)
        // (Not `key + [0]`: HMAC zero-pads keys to the block size, so a trailing zero byte yields the same code.)
        #expect(throws: JWTError.signatureInvalid) {
            try JWTVerifier(key: key + [1], algorithms: [algorithm], now: { Date(timeIntervalSince1970: 1_735_689_600) })
                .verify(token)
        }
    }

    /// Recomputes the HS256 signature with the `openssl` command-line tool, an implementation independent of ours.
    @Test func signatureMatchesOpenSSLCommandLine() throws {
        let secret = "example-secret-not-real"
        let token = JWTSigner(algorithm: .hs256, key: Array(secret.utf8)).sign(TestClaims.trustPaymentsClaims)
        let signingInput = String(token[..<token.lastIndex(of: ".")!])
        let signature = Base64URL.decode(token[token.index(after: token.lastIndex(of: ".")!)...])

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["dgst", "-sha256", "-hmac", secret, "-binary"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(signingInput.utf8))
        try input.fileHandleForWriting.close()
        let digest = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()

        #expect(process.terminationStatus == 0)
        #expect(digest.count == 32)
        #expect(signature == Array(digest))
    }

    @Test func signerAndVerifierNeverPrintTheKey() {
        let key = Array("super-secret-key-material".utf8)
        let texts = [
            String(describing: JWTSigner(algorithm: .hs256, key: key)),
            String(reflecting: JWTSigner(algorithm: .hs256, key: key)),
            String(describing: JWTVerifier(key: key)),
        ]
        for text in texts {
            #expect(!text.contains("super-secret"))
            #expect(!text.contains("115, 117, 112"))  // "sup" as bytes
        }
    }
}
