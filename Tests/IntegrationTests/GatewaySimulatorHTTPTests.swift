import Foundation
import HTTP
import JWT
import PaymentStages
import PayPipeDevTools
import Testing

extension Integration {
/// The simulator over real HTTP (no database): `/jwt/` request checks, `/json/` with HTTP Basic, and the client's
/// handling of a 3-D Secure redirect and an HTTP 500.
@Suite struct GatewaySimulatorHTTPTests {
    static let user = "jwt.sim.test"
    static let secret = "sim-test-secret"

    static func withSimulator(_ body: (GatewaySimulator, GatewayEndpoint) throws -> Void) throws {
        let simulator = GatewaySimulator(configuration: GatewaySimulatorConfiguration(
            port: 0, merchants: [user: secret], webservicesUsers: ["ws": "pw"], slowResponseSeconds: 0, threads: 2))
        try simulator.start()
        defer { simulator.stop() }
        try body(simulator, GatewayEndpoint(baseUrl: simulator.baseURL, siteReference: "test_site1", jwtUsername: user, secret: secret))
    }

    static func claims(amount: Int64, order: String, types: [String] = ["AUTH"]) -> JSONValue {
        ["iss": .string(user), "iat": 0, "payload": [
            "accounttypedescription": "ECOM", "sitereference": "test_site1", "currencyiso3a": "GBP",
            "baseamount": .string(String(amount)), "orderreference": .string(order), "pan": "4111111111111111",
            "expirydate": "07/2030", "requesttypedescriptions": .array(types.map(JSONValue.string)),
        ]]
    }

    static let client = TrustPaymentsClient(http: HTTPClientConfiguration(connectTimeout: 1, totalTimeout: 3), transport: .init(deployment: .sandbox))

    @Test func clientAndSimulatorAgreeOnEveryOutcome() throws {
        try Self.withSimulator { simulator, endpoint in
            let authorized = Self.client.authorize(claims: Self.claims(amount: 1000, order: "O1"), requestTypes: ["AUTH"], endpoint: endpoint, requestId: "1", now: Date())
            #expect(authorized.outcome == .authorized)
            #expect(authorized.maskedPan == "411111######1111")
            let challenge = Self.client.authorize(
                claims: Self.claims(amount: 1095, order: "O2", types: ["THREEDQUERY", "AUTH"]), requestTypes: ["THREEDQUERY", "AUTH"],
                endpoint: endpoint, requestId: "2", now: Date())
            #expect(challenge.outcome == .declined)
            #expect(challenge.reason == "3ds_challenge_required")
            let serverError = Self.client.authorize(claims: Self.claims(amount: 1097, order: "O3"), requestTypes: ["AUTH"], endpoint: endpoint, requestId: "3", now: Date())
            #expect(serverError.outcome == .uncertain)
            #expect(serverError.errorCode == "paypipe.http_500")
            let reset = Self.client.authorize(claims: Self.claims(amount: 1096, order: "O4"), requestTypes: ["AUTH"], endpoint: endpoint, requestId: "4", now: Date())
            #expect(reset.outcome == .uncertain)
            #expect(reset.errorCode == "paypipe.transport")
            let locked = Self.client.authorize(claims: Self.claims(amount: 1093, order: "O5"), requestTypes: ["AUTH"], endpoint: endpoint, requestId: "5", now: Date())
            #expect(locked.outcome == .uncertain)
            #expect(simulator.ledger.totalAuths == 2)
            #expect(Self.client.queryTransaction(orderReference: "O4", endpoint: endpoint, requestId: "q", now: Date())
                    == .found(GatewayResult(outcome: .authorized, errorCode: "0", errorMessage: "Ok", transactionReference: "9-9-2",
                                            settleStatus: "0", acquirerResponseCode: "00", authCode: "SIM42", maskedPan: "411111######1111")))
            #expect(Self.client.queryTransaction(orderReference: "O3", endpoint: endpoint, requestId: "q", now: Date()) == .notFound)
        }
    }

    @Test func requestJWTsAreVerified() throws {
        try Self.withSimulator { _, endpoint in
            // Signed with another secret: the simulator refuses (10300), and its answer cannot be verified either.
            let wrongKey = GatewayEndpoint(baseUrl: endpoint.baseUrl, siteReference: "test_site1", jwtUsername: Self.user, secret: "other")
            let refused = Self.client.authorize(claims: Self.claims(amount: 1000, order: "O6"), requestTypes: ["AUTH"], endpoint: wrongKey, requestId: "6", now: Date())
            #expect(refused.outcome == .uncertain)
            #expect(refused.errorCode == "paypipe.signature_invalid")
            // Too old an `iat`: a signed 10300, which is permanent.
            let stale = Self.client.authorize(
                claims: Self.claims(amount: 1000, order: "O7"), requestTypes: ["AUTH"], endpoint: endpoint, requestId: "7",
                now: Date().addingTimeInterval(-3600))
            #expect(stale.outcome == .permanentError)
            #expect(stale.errorCode == "10300")
        }
    }

    /// Found by scripts/chaos: an AUTH that waited in the gateway's queue past the client's timeout was recorded after
    /// the status query had answered "not found", and the resend charged twice. The AUTH now expires (`exp`) once the
    /// client has certainly given up, and the gateway refuses it from then on.
    @Test func anAuthProcessedAfterItsExpiryIsNeverRecorded() throws {
        #expect(TrustPaymentsClient.requestLifetime(totalTimeout: 3) == 4)
        #expect(TrustPaymentsClient.requestLifetime(totalTimeout: 2.5) == 4)
        try Self.withSimulator { simulator, endpoint in
            // Signed 5 s ago with a 3 s timeout: `exp` = iat + 4 has passed by the time the gateway looks at it.
            let late = Self.client.authorize(
                claims: Self.claims(amount: 1000, order: "O8"), requestTypes: ["AUTH"], endpoint: endpoint, requestId: "8",
                now: Date().addingTimeInterval(-5))
            #expect(late.errorCode == "10300")
            #expect(simulator.ledger.authCount(orderReference: "O8") == 0)
            #expect(Self.client.queryTransaction(orderReference: "O8", endpoint: endpoint, requestId: "q", now: Date()) == .notFound)
            // Within its lifetime it is processed as usual.
            let inTime = Self.client.authorize(
                claims: Self.claims(amount: 1000, order: "O9"), requestTypes: ["AUTH"], endpoint: endpoint, requestId: "9",
                now: Date().addingTimeInterval(-2))
            #expect(inTime.outcome == .authorized)
            #expect(simulator.ledger.authCount(orderReference: "O9") == 1)
        }
    }

    @Test func jsonEndpointNeedsBasicAuth() throws {
        try Self.withSimulator { simulator, _ in
            let body = Array(#"{"alias":"ws","version":"1.00","request":[{"requesttypedescriptions":["AUTH"],"sitereference":"test_site1","accounttypedescription":"ECOM","currencyiso3a":"GBP","baseamount":"1051","orderreference":"J1","pan":"4111111111111111","expirydate":"01/2031"}]}"#.utf8)
            let url = simulator.baseURL + "/json/"
            let http = HTTPClient()
            let anonymous = try http.send(HTTPRequest(method: "POST", url: url, headers: [HTTPHeader(name: "Content-Type", value: "application/json")], body: body))
            #expect(anonymous.status == 401)
            let authorization = "Basic " + Data("ws:pw".utf8).base64EncodedString()
            let answer = try http.send(HTTPRequest(method: "POST", url: url, headers: [
                HTTPHeader(name: "Content-Type", value: "application/json"), HTTPHeader(name: "Authorization", value: authorization),
            ], body: body))
            #expect(answer.status == 200)
            let parsed = try JSONValue.parse(answer.body)
            #expect(parsed["version"]?.stringValue == "1.00")
            #expect(parsed["response"]?[0]?["errorcode"]?.stringValue == "70000")
            #expect(simulator.ledger.authCount(orderReference: "J1") == 1)
        }
    }
}
}
