import Foundation
import HTTP
import JWT
import PaymentDomain
import PaymentStages
import Testing

extension Integration {
    /// A gateway answer JWT whose `iat` is older than the call's total timeout plus the clock skew cannot belong to
    /// this call (a replayed or cached answer): refused, so the outcome stays unknown and is reconciled.
    @Suite struct GatewayAnswerFreshnessTests {
        static let secret = "freshness-secret-not-real"

        /// A stand-in gateway on loopback that answers every AUTH "authorised" with an answer issued `age` seconds ago.
        static func withGateway(answerAge age: Double, _ body: (String) throws -> Void) throws {
            let signer = JWTSigner(algorithm: .hs256, key: Array(secret.utf8))
            let server = HTTPServer(host: "127.0.0.1", port: 0, threads: 1) { _ in
                let claims: JSONValue = [
                    "iat": .integer(Int64(Date().timeIntervalSince1970 - age)),
                    "payload": ["version": "1.00", "response": [[
                        "requesttypedescription": "AUTH", "errorcode": "0", "errormessage": "Ok", "settlestatus": "0",
                        "transactionreference": "1-2-3", "customeroutput": "RESULT",
                    ]]],
                ]
                let body: JSONValue = ["jwt": .string(signer.sign(claims))]
                return .json(body.serialized())
            }
            try server.start()
            defer { server.stop() }
            try body("http://127.0.0.1:\(server.boundPort)")
        }

        static func authorize(_ baseURL: String) -> GatewayResult {
            TrustPaymentsClient(
                http: HTTPClientConfiguration(connectTimeout: 1, totalTimeout: 2), transport: .init(deployment: .sandbox)).authorize(
                claims: ["iss": "jwt.user", "payload": ["baseamount": "1000"]], requestTypes: ["AUTH"],
                endpoint: GatewayEndpoint(baseUrl: baseURL, siteReference: "test_site", jwtUsername: "jwt.user", secret: secret),
                requestId: "A1")
        }

        @Test func anAnswerIssuedLongBeforeTheCallIsRefused() throws {
            // Timeout 2 s + skew 300 s: an answer issued 400 s ago cannot be this call's.
            try Self.withGateway(answerAge: 400) { url in
                let result = Self.authorize(url)
                #expect(result.outcome == .uncertain)
                #expect(result.errorCode == "paypipe.signature_invalid")
            }
        }

        @Test func aFreshAnswerIsBelieved() throws {
            try Self.withGateway(answerAge: 5) { url in
                #expect(Self.authorize(url).outcome == .authorized)
            }
        }
    }
}
