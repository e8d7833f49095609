import Foundation
import HTTP
import JWT
import PaymentStages
import PayPipeDevTools
import Pipeline
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
            guard case .found(var found) = Self.client.queryTransaction(orderReference: "O4", endpoint: endpoint, requestId: "q", now: Date()) else {
                throw TestFailure("the reset AUTH is not found")
            }
            // The simulator gives an authorised AUTH the date its settlement run takes it.
            #expect(SettlementSchedule.dueDate(found.settleDueDate) != nil)
            found.settleDueDate = nil
            #expect(found == GatewayResult(outcome: .authorized, errorCode: "0", errorMessage: "Ok", transactionReference: "9-9-2",
                                           settleStatus: "0", acquirerResponseCode: "00", authCode: "SIM42", maskedPan: "411111######1111"))
            #expect(Self.client.queryTransaction(orderReference: "O3", endpoint: endpoint, requestId: "q", now: Date()) == .notFound)
        }
    }

    /// `PAYPIPE_SIM_LATENCY` (scripts/bench --only scaling): every answer waits, and is then the usual one.
    @Test func aConfiguredLatencyDelaysEveryAnswer() throws {
        var configuration = try GatewaySimulatorConfiguration.fromEnvironment(EnvironmentReader([
            "PAYPIPE_SIM_MERCHANTS": "\(Self.user)=\(Self.secret)", "PAYPIPE_SIM_PORT": "0", "PAYPIPE_SIM_LATENCY": "300ms"]))
        #expect(configuration.latencySeconds == 0.3)
        configuration.threads = 2
        let simulator = GatewaySimulator(configuration: configuration)
        try simulator.start()
        defer { simulator.stop() }
        let endpoint = GatewayEndpoint(baseUrl: simulator.baseURL, siteReference: "test_site1", jwtUsername: Self.user, secret: Self.secret)
        let started = Date()
        let answer = Self.client.authorize(claims: Self.claims(amount: 1000, order: "L1"), requestTypes: ["AUTH"], endpoint: endpoint, requestId: "1", now: Date())
        #expect(answer.outcome == .authorized)
        #expect(Date().timeIntervalSince(started) >= 0.3)
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

    static func webservicesEndpoint(_ simulator: GatewaySimulator, password: String = "pw") -> GatewayEndpoint {
        GatewayEndpoint(baseUrl: simulator.baseURL, siteReference: "test_site1", transport: .webservices, username: "ws", secret: password)
    }

    static let webservicesClient = TrustPaymentsClient(
        http: HTTPClientConfiguration(connectTimeout: 1, totalTimeout: 3), transport: .init(deployment: .sandbox),
        webservices: WebservicesTransport(connectTimeout: 1, totalTimeout: 2))

    /// The `/json/` transport end to end: the outcomes, an answer that does not echo the request reference (never
    /// believed), the query by the attempt's order reference, HTTP Basic, and the documented headers.
    @Test func webservicesClientAndSimulatorAgree() throws {
        try Self.withSimulator { simulator, _ in
            let endpoint = Self.webservicesEndpoint(simulator)
            let client = Self.webservicesClient
            let authorized = client.authorize(claims: Self.claims(amount: 1000, order: "W1"), requestTypes: ["AUTH"], endpoint: endpoint, requestId: "A1", now: Date())
            #expect(authorized.outcome == .authorized)
            #expect(authorized.maskedPan == "411111######1111")
            #expect(client.authorize(claims: Self.claims(amount: 1051, order: "W2"), requestTypes: ["AUTH"], endpoint: endpoint, requestId: "A2", now: Date()).outcome == .declined)
            // …92: recorded, then answered with another request reference.
            let mismatch = client.authorize(claims: Self.claims(amount: 1092, order: "W3"), requestTypes: ["AUTH"], endpoint: endpoint, requestId: "A3", now: Date())
            #expect(mismatch.outcome == .uncertain)
            #expect(mismatch.errorCode == "paypipe.request_reference_mismatch")
            // …98: recorded, answered after the total timeout.
            let slowSimulator = GatewaySimulator(configuration: GatewaySimulatorConfiguration(
                port: 0, merchants: [:], webservicesUsers: ["ws": "pw"], slowResponseSeconds: 1.5, threads: 2))
            try slowSimulator.start()
            defer { slowSimulator.stop() }
            let slow = TrustPaymentsClient(http: Self.client.http, transport: .init(deployment: .sandbox), webservices: WebservicesTransport(connectTimeout: 1, totalTimeout: 0.5))
            let late = slow.authorize(claims: Self.claims(amount: 1098, order: "W4"), requestTypes: ["AUTH"], endpoint: Self.webservicesEndpoint(slowSimulator),
                                      requestId: "A4", now: Date())
            #expect(late.outcome == .uncertain)
            #expect(late.errorCode == "paypipe.transport")
            #expect(slowSimulator.ledger.authCount(orderReference: "W4") == 1)
            guard case .found(let adopted) = client.queryTransaction(orderReference: "W3", endpoint: endpoint, requestId: "Q3", now: Date()) else {
                Issue.record("the AUTH whose answer was not believed must be found by the query")
                return
            }
            #expect(adopted.outcome == .authorized)
            #expect(client.queryTransaction(orderReference: "W9", endpoint: endpoint, requestId: "Q9", now: Date()) == .notFound)
            let otherSite = GatewayEndpoint(baseUrl: simulator.baseURL, siteReference: "test_site2", transport: .webservices, username: "ws", secret: "pw")
            #expect(client.queryTransaction(orderReference: "W1", endpoint: otherSite, requestId: "Q1", now: Date()) == .notFound, "records are per site")
            let refused = client.authorize(claims: Self.claims(amount: 1000, order: "W5"), requestTypes: ["AUTH"], endpoint: Self.webservicesEndpoint(simulator, password: "wrong"),
                                           requestId: "A5", now: Date())
            #expect(refused.outcome == .permanentError)
            #expect(refused.errorCode == "paypipe.http_401")
            #expect(simulator.ledger.authCount(orderReference: "W5") == 0)

            let captured = try #require(simulator.ledger.captured.first)
            let headers = Dictionary((captured["headers"]?.objectValue ?? []).map { ($0.key.lowercased(), $0.value.stringValue ?? "") }, uniquingKeysWith: { a, _ in a })
            #expect(headers["content-type"] == "application/json;charset=utf-8")
            #expect(headers["accept"] == "application/json")
            #expect(headers["versioninfo"] == TrustPaymentsClient.versionInfo)
            #expect(headers["authorization"] == nil, "the simulator never keeps credentials")
            let body = try #require(captured["body"])
            #expect(headers["requestreference"] == body["request"]?[0]?["requestreference"]?.stringValue)
            #expect(headers["requestreference"]?.hasPrefix("A1-") == true)
            #expect(body["alias"] == "ws")
            #expect(body["version"] == "1.00")
            #expect(body["libraryversion"]?.stringValue == TrustPaymentsClient.libraryVersion)
            #expect(body["request"]?[0]?["orderreference"] == "W1")
            #expect(body["request"]?[0]?["iss"] == nil, "the request object is the claims' payload")
            let references = simulator.ledger.captured.compactMap { $0["body"]?["request"]?[0]?["requestreference"]?.stringValue }
            #expect(Set(references).count == references.count, "a fresh reference per request")
        }
    }

    /// The gateway's answer shape on `/json/`: the reference echoed, every request object answered in order, the
    /// version checked (30007), `secrand`.
    @Test func jsonAnswersEveryRequestObject() throws {
        try Self.withSimulator { simulator, _ in
            func post(_ text: String) throws -> JSONValue {
                let answer = try HTTPClient().send(HTTPRequest(method: "POST", url: simulator.baseURL + "/json/", headers: [
                    HTTPHeader(name: "Content-Type", value: "application/json"),
                    HTTPHeader(name: "Authorization", value: "Basic " + Data("ws:pw".utf8).base64EncodedString()),
                ], body: Array(text.utf8)))
                return try JSONValue.parse(answer.body)
            }
            let auth = #"{"requestreference":"Aabc12345","requesttypedescription":"AUTH","sitereference":"test_site1","accounttypedescription":"ECOM","currencyiso3a":"GBP","baseamount":"1000","orderreference":"M1","pan":"4111111111111111","expirymonth":"11","expiryyear":"2031"}"#
            let query = #"{"requestreference":"Aabc12345","requesttypedescriptions":["TRANSACTIONQUERY"],"filter":{"orderreference":[{"value":"M1"}]}}"#
            let both = try post(#"{"alias":"ws","version":"1.00","request":[\#(auth),\#(query)]}"#)
            #expect(both["requestreference"] == "Aabc12345")
            #expect(both["secrand"]?.stringValue?.isEmpty == false)
            #expect(both["response"]?.arrayValue?.compactMap { $0["requesttypedescription"]?.stringValue } == ["AUTH", "TRANSACTIONQUERY"])
            #expect(both["response"]?[1]?["records"]?.arrayValue?.count == 1)
            let version = try post(#"{"alias":"ws","version":"2.00","request":[\#(auth)]}"#)
            #expect(version["response"]?[0]?["errorcode"] == "30007")
            let twice = try post(#"{"alias":"ws","version":"1.00","request":[{"requestreference":"Ax","requesttypedescription":"AUTH","requesttypedescriptions":["AUTH"]}]}"#)
            #expect(twice["response"]?[0]?["errorcode"] == "60040")
            #expect(simulator.ledger.authCount(orderReference: "M1") == 1)
        }
    }
}
}
