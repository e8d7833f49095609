import Crypto
import Foundation
import JWT
import Testing

@Suite struct JWTVerifierTests {
    static let key = Array("verifier-test-key-0123456789abcdef".utf8)
    static let issued: Int64 = 1_735_689_600

    static func clock(_ seconds: Int64) -> @Sendable () -> Date {
        { Date(timeIntervalSince1970: TimeInterval(seconds)) }
    }

    static func token(_ claims: JSONValue, algorithm: JWTAlgorithm = .hs256) -> String {
        JWTSigner(algorithm: algorithm, key: key).sign(claims)
    }

    /// Builds a token from raw segment contents, signed correctly with `key` (for shape/alg tests).
    static func rawToken(header: String, payload: String, algorithm: JWTAlgorithm = .hs256) -> String {
        let headerPart = Base64URL.encode(Array(header.utf8))
        let payloadPart = Base64URL.encode(Array(payload.utf8))
        let input = Array("\(headerPart).\(payloadPart)".utf8)
        let signature = Base64URL.encode(HMAC.authenticationCode(algorithm.hmacAlgorithm, key: key, message: input))
        return "\(headerPart).\(payloadPart).\(signature)"
    }

    @Test func tamperedPayloadIsRejected() {
        let token = Self.token(["iss": "merchant", "amount": "1050"])
        var parts = token.split(separator: ".").map(String.init)
        parts[1] = Base64URL.encode(Array(#"{"iss":"merchant","amount":"9999"}"#.utf8))
        #expect(throws: JWTError.signatureInvalid) {
            try JWTVerifier(key: Self.key).verify(parts.joined(separator: "."))
        }
    }

    @Test func tamperedSignatureIsRejected() {
        let token = Self.token(["iss": "merchant"])
        var signature = Base64URL.decode(token.split(separator: ".")[2])!
        signature[signature.count - 1] ^= 0x01
        let forged = token[..<token.lastIndex(of: ".")!] + "." + Base64URL.encode(signature)
        #expect(throws: JWTError.signatureInvalid) { try JWTVerifier(key: Self.key).verify(String(forged)) }
        let truncated = String(token.dropLast(2))
        #expect(throws: JWTError.self) { try JWTVerifier(key: Self.key).verify(truncated) }
    }

    @Test func algNoneIsRejected() {
        let payload = Base64URL.encode(Array(#"{"iss":"attacker"}"#.utf8))
        for header in [#"{"alg":"none","typ":"JWT"}"#, #"{"alg":"None"}"#, #"{"alg":"NONE"}"#] {
            let headerPart = Base64URL.encode(Array(header.utf8))
            for token in ["\(headerPart).\(payload).", "\(headerPart).\(payload).AAAA"] {
                #expect(throws: JWTError.self) { try JWTVerifier(key: Self.key).verify(token) }
            }
        }
        let none = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + ".\(payload)."
        #expect(throws: JWTError.unsupportedAlgorithm("none")) { try JWTVerifier(key: Self.key).verify(none) }
    }

    @Test func unexpectedAlgorithmIsRejectedEvenWithAValidSignature() {
        let token = Self.token(["iss": "merchant"], algorithm: .hs512)
        #expect(throws: JWTError.algorithmNotAllowed(.hs512)) {
            try JWTVerifier(key: Self.key, algorithms: [.hs256]).verify(token)
        }
        #expect(throws: JWTError.unsupportedAlgorithm("RS256")) {
            try JWTVerifier(key: Self.key).verify(
                Base64URL.encode(Array(#"{"alg":"RS256"}"#.utf8)) + ".e30.AAAA")
        }
    }

    @Test func issuedAtMaxAgeAndFutureSkew() throws {
        let token = Self.token(["iss": "merchant", "iat": .integer(Self.issued)])
        let fifteenMinutes: Int64 = 15 * 60
        // Exactly at the limit passes; one second later fails with the age.
        _ = try JWTVerifier(key: Self.key, maxAge: fifteenMinutes, now: Self.clock(Self.issued + fifteenMinutes)).verify(token)
        #expect(throws: JWTError.expired(iatAge: fifteenMinutes + 1)) {
            try JWTVerifier(key: Self.key, maxAge: fifteenMinutes, now: Self.clock(Self.issued + fifteenMinutes + 1)).verify(token)
        }
        // Issued 60 s ahead of our clock is within the default skew; 61 s is not.
        _ = try JWTVerifier(key: Self.key, maxAge: fifteenMinutes, now: Self.clock(Self.issued - 60)).verify(token)
        #expect(throws: JWTError.issuedInFuture(seconds: 61)) {
            try JWTVerifier(key: Self.key, maxAge: fifteenMinutes, now: Self.clock(Self.issued - 61)).verify(token)
        }
        // Fractional NumericDate is accepted.
        let fractional = Self.token(["iat": .double(Double(Self.issued) + 0.5)])
        _ = try JWTVerifier(key: Self.key, maxAge: 10, now: Self.clock(Self.issued + 5)).verify(fractional)
    }

    @Test func missingOrInvalidIssuedAt() throws {
        let noIAT = Self.token(["iss": "merchant"])
        _ = try JWTVerifier(key: Self.key).verify(noIAT)
        #expect(throws: JWTError.missingIssuedAt) { try JWTVerifier(key: Self.key, maxAge: 900).verify(noIAT) }
        #expect(throws: JWTError.missingIssuedAt) { try JWTVerifier(key: Self.key, requireIssuedAt: true).verify(noIAT) }
        let stringIAT = Self.token(["iat": "1735689600"])
        #expect(throws: JWTError.malformed("iat is not a number of seconds")) {
            try JWTVerifier(key: Self.key, maxAge: 900).verify(stringIAT)
        }
    }

    @Test func notBeforeClaim() throws {
        let token = Self.token(["nbf": .integer(Self.issued)])
        _ = try JWTVerifier(key: Self.key, now: Self.clock(Self.issued - 60)).verify(token)
        #expect(throws: JWTError.notYetValid(seconds: 61)) {
            try JWTVerifier(key: Self.key, now: Self.clock(Self.issued - 61)).verify(token)
        }
    }

    @Test(arguments: [
        "",
        "abc",
        "a.b",
        "a.b.c.d",
        "eyJhbGciOiJIUzI1NiJ9..",
        "!!!.e30.AAAA",
        "eyJhbGciOiJIUzI1NiJ9=.e30.AAAA",
        "W10.e30.AAAA",  // header is [] (not an object)
        "e30.e30.AAAA",  // header {} has no alg
    ])
    func malformedTokensAreRejected(token: String) {
        #expect(throws: JWTError.self) { try JWTVerifier(key: Self.key).verify(token) }
    }

    @Test func claimsMustBeAJSONObject() {
        let header = #"{"alg":"HS256"}"#
        #expect(throws: JWTError.malformed("claims are not a JSON object")) {
            try JWTVerifier(key: Self.key).verify(Self.rawToken(header: header, payload: "[1,2]"))
        }
        #expect(throws: JWTError.self) {
            try JWTVerifier(key: Self.key).verify(Self.rawToken(header: header, payload: #"{"a":1,"a":2}"#))
        }
        #expect(throws: JWTError.malformed("header lists critical extensions")) {
            try JWTVerifier(key: Self.key).verify(Self.rawToken(header: #"{"alg":"HS256","crit":["exp"]}"#, payload: "{}"))
        }
        #expect(throws: Never.self) {
            try JWTVerifier(key: Self.key).verify(Self.rawToken(header: header, payload: "{}"))
        }
    }
}
