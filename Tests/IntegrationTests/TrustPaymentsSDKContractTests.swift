import Foundation
import HTTP
import JWT
import PaymentStages
import Testing

extension Integration {
/// Trust Payments' own Python SDK (`securetrading` 1.0.26, installed by scripts/bootstrap) against the
/// `paypipe-gateway-sim` executable over `/json/`, and PayPipe's requests against the SDK's: both are captured at the simulator and must be
/// equal as parsed JSON, except exactly `requestreference`, `versioninfo` and `libraryversion`. Fails (never skips)
/// when python3 or the SDK is missing.
@Suite struct TrustPaymentsSDKContractTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let script = packageRoot.appendingPathComponent("Tests/Contract/trustpayments_sdk_contract.py").path

    /// An Apple Pay direct AUTH (merchant-decrypts: pan, tavv, eci) as the authorize stage builds it.
    static let authPayload: JSONValue = [
        "accounttypedescription": "ECOM", "sitereference": "test_site1", "currencyiso3a": "GBP", "baseamount": "1000",
        "orderreference": "SDK-C1", "requesttypedescriptions": ["AUTH"], "walletsource": "APPLEPAY", "pan": "4111111111111111",
        "expirydate": "07/2030", "tavv": "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", "eci": "05", "walletdisplayname": "Visa 1111",
    ]

    /// The body without the three members that differ per request or per library.
    static func comparable(_ body: JSONValue) -> JSONValue {
        var body = body
        let requests = (body["request"]?.arrayValue ?? []).map { request in
            JSONValue.object((request.objectValue ?? []).filter { $0.key != "requestreference" && $0.key != "versioninfo" })
        }
        body.set(.array(requests), forKey: "request")
        return .object((body.objectValue ?? []).filter { $0.key != "libraryversion" }.sorted { $0.key < $1.key })
    }

    /// Key order does not matter in JSON objects.
    static func normalised(_ value: JSONValue) -> JSONValue {
        if let object = value.objectValue { return .object(object.map { ($0.key, normalised($0.value)) }.sorted { $0.key < $1.key }) }
        if let array = value.arrayValue { return .array(array.map(normalised)) }
        return value
    }

    static func headers(_ capture: JSONValue) -> [String: String] {
        Dictionary((capture["headers"]?.objectValue ?? []).map { ($0.key.lowercased(), $0.value.stringValue ?? "") }, uniquingKeysWith: { first, _ in first })
    }

    /// The `/json/` requests the simulator received (`GET /_sim/requests`).
    static func captured(_ baseURL: String) throws -> [JSONValue] {
        try JSONValue.parse(HTTPClient().send(HTTPRequest(url: baseURL + "/_sim/requests")).body)["requests"]?.arrayValue ?? []
    }

    @Test func theSDKAcceptsEveryAnswerAndPayPipeEncodesAsTheSDKDoes() throws {
        // The real paypipe-gateway-sim executable, configured through its documented variables.
        let simulator = try GatewaySimulatorProcess(["PAYPIPE_SIM_WEBSERVICES_USERS": "ws@paypipe.test=sdk-pw", "PAYPIPE_SIM_SETTLE_DELAY": "1s"])
        defer { simulator.stop() }
        let baseURL = simulator.baseURL
        let endpoint = GatewayEndpoint(baseUrl: baseURL, siteReference: "test_site1", transport: .webservices, username: "ws@paypipe.test", secret: "sdk-pw")
        let client = TrustPaymentsClient(http: HTTPClientConfiguration(connectTimeout: 2, totalTimeout: 5), transport: .init(deployment: .sandbox))
        // PayPipe first: its AUTH and its status query for the same order.
        let authorized = client.authorize(claims: ["iss": "ws@paypipe.test", "iat": 0, "payload": Self.authPayload], requestTypes: ["AUTH"],
                                          endpoint: endpoint, requestId: "A1", now: Date())
        #expect(authorized.outcome == .authorized)
        guard case .found = client.queryTransaction(orderReference: "SDK-C1", endpoint: endpoint, requestId: "Q1", now: Date()) else {
            Issue.record("PayPipe's query must find its AUTH")
            return
        }
        let ours = try Self.captured(baseURL)
        #expect(ours.count == 2)

        let fields = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-sdk-auth-\(UUID().uuidString).json")
        try Data(Self.authPayload.serialized()).write(to: fields)
        defer { try? FileManager.default.removeItem(at: fields) }
        let run = try ChildProcess.runCapturingOutput("/usr/bin/env", [
            "python3", Self.script, "--url", baseURL, "--user", "ws@paypipe.test", "--password", "sdk-pw",
            "--auth-json", fields.path, "--order", "SDK-C1",
        ])
        #expect(run.status == 0, "the SDK contract script failed (status \(run.status)): \(run.text)")
        let summary = try JSONValue.parse(Array((run.text.split(separator: "\n").last.map(String.init) ?? "").utf8))
        #expect(summary["ok"] == true)
        #expect(summary["sdk"] == "1.0.26")

        let sdk = Array(try Self.captured(baseURL).dropFirst(ours.count))
        #expect(sdk.count >= 8, "every SDK step reached the simulator")
        // PayPipe's AUTH and query equal the SDK's own encoding of the same requests.
        for (index, name) in ["AUTH", "TRANSACTIONQUERY by order"].enumerated() {
            let mine = try #require(ours[index]["body"])
            let theirs = try #require(sdk[index == 0 ? 0 : 2]["body"])
            #expect(Self.normalised(Self.comparable(mine)) == Self.normalised(Self.comparable(theirs)), "\(name): \(mine.serializedString) vs \(theirs.serializedString)")
            #expect(mine["request"]?[0]?["requestreference"] != nil && mine["request"]?[0]?["versioninfo"] != nil && mine["libraryversion"] != nil)
        }
        // The headers the SDK sends, present and well formed on PayPipe's requests.
        let sdkHeaders = Self.headers(sdk[0])
        for capture in ours {
            let headers = Self.headers(capture)
            #expect(headers["content-type"] == sdkHeaders["content-type"])
            #expect(headers["content-type"] == "application/json;charset=utf-8")
            #expect(headers["accept"] == sdkHeaders["accept"])
            #expect(headers["requestreference"] == capture["body"]?["request"]?[0]?["requestreference"]?.stringValue)
            #expect(headers["requestreference"].map { !$0.isEmpty && $0.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F } } == true)
            #expect(headers["versioninfo"].map { $0.split(separator: ":", omittingEmptySubsequences: true).count == 4 } == true,
                    "VERSIONINFO is LANGUAGE::VERSION::LIBRARY::PLATFORM like the SDK's \(sdkHeaders["versioninfo"] ?? "")")
        }
        #expect(sdkHeaders["requestreference"] == sdk[0]["body"]?["request"]?[0]?["requestreference"]?.stringValue)
    }
}
}
