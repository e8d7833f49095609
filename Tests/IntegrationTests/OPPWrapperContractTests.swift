import ApplePay
import Foundation
import HTTP
import JWT
@testable import PaymentStages
import Testing

extension Integration {
/// PAY.ON's own Python wrapper (`opp` 1.3.1, installed by scripts/bootstrap) against the `paypipe-gateway-sim`
/// executable's OPP face, after PayPipe's OPP connector: the wrapper (legacy `authentication.*` parameters) must get
/// every answer it expects, and PayPipe's form (Bearer) must be the wrapper's encoding of the same fields, except
/// exactly the wrapper's authentication, `customParameters[SHOPPER_pluginId]`, `testMode`, and PayPipe's `entityId`
/// and `merchantTransactionId`. Fails (never skips) when python3 or the wrapper is missing.
@Suite struct OPPWrapperContractTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let script = packageRoot.appendingPathComponent("Tests/Contract/opp_wrapper_contract.py").path
    static let entity = "8a8294174b7ecb28014b9699220015ca"

    static func form(_ capture: JSONValue, without: Set<String>) -> [String: String] {
        Dictionary(uniqueKeysWithValues: (capture["form"]?.objectValue ?? []).filter { !without.contains($0.key) }.map { ($0.key, $0.value.stringValue ?? "") })
    }

    @Test func theWrapperAcceptsEveryAnswerAndPayPipeEncodesAsTheWrapperDoes() throws {
        let simulator = try GatewaySimulatorProcess([
            "PAYPIPE_SIM_OPP_TOKENS": "paypipe-bearer=\(Self.entity)", "PAYPIPE_SIM_OPP_USERS": "8a8294174b7ecb28014b9699220015cc=wrapper-pw",
        ])
        defer { simulator.stop() }
        let baseURL = simulator.baseURL
        // PayPipe first: a merchant-decrypts pre-authorisation with its bearer token.
        let payment = GatewayPaymentDetails(paymentId: UUID(), orderReference: "OPP-C1", amountMinor: 2000, currency: "EUR")
        let card = DecryptedPaymentData(
            applicationPrimaryAccountNumber: "5100000000000511", applicationExpirationDate: "300731", currencyCode: "978", transactionAmount: 2000,
            deviceManufacturerIdentifier: "040010030273", paymentDataType: "3DSecure",
            paymentData: .init(onlinePaymentCryptogram: "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", eciIndicator: "02"))
        let request = try OPPWire.authorizationRequest(
            settings: OPPSettings(entityId: Self.entity, paymentBrand: "MASTER", paymentType: "PA"), mode: .merchantDecrypts, payment: payment,
            data: StoredPaymentData(decrypted: card, walletToken: nil, paymentMethodDisplayName: nil, paymentMethodNetwork: nil, billingContact: nil, shippingContact: nil))
        let endpoint = GatewayEndpoint(baseUrl: baseURL, siteReference: Self.entity, transport: .webservices, username: "", secret: "paypipe-bearer", connector: .opp)
        let connector = OPPConnector(http: HTTPClientConfiguration(connectTimeout: 2, totalTimeout: 5), transport: .init(deployment: .sandbox))
        let authorised = connector.authorize(request, reference: "OPP-C1.PAYPIPE01", endpoint: endpoint, requestId: "A1", now: Date(), window: nil,
                                             using: HTTPClient())
        #expect(authorised.outcome == .authorized)
        let ours = try TrustPaymentsSDKContractTests.captured(baseURL)
        #expect(ours.count == 1)

        let fields = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-opp-form-\(UUID().uuidString).json")
        let stored = try #require(request.claims["payload"])
        try Data(stored.serialized()).write(to: fields)
        defer { try? FileManager.default.removeItem(at: fields) }
        let run = try ChildProcess.runCapturingOutput("/usr/bin/env", [
            "python3", Self.script, "--url", baseURL, "--user", "8a8294174b7ecb28014b9699220015cc", "--password", "wrapper-pw", "--entity", Self.entity,
            "--form-json", fields.path, "--reference", "OPP-C1.WRAPPER1",
        ])
        #expect(run.status == 0, "the OPP wrapper contract script failed (status \(run.status)): \(run.text)")
        let summary = try JSONValue.parse(Array((run.text.split(separator: "\n").last.map(String.init) ?? "").utf8))
        #expect(summary["ok"] == true)
        #expect(summary["sdk"] == "1.3.1")
        #expect(summary["query"] == .integer(1))

        let wrapper = Array(try TrustPaymentsSDKContractTests.captured(baseURL).dropFirst(ours.count))
        // PA, CP, RF, PA, RV, DB; the wrong-password request is refused before it is captured.
        #expect(wrapper.map { $0["form"]?["paymentType"]?.stringValue ?? "" } == ["PA", "CP", "RF", "PA", "RV", "DB"])
        let theirs = try #require(wrapper.first)
        #expect(ours[0]["bearer"] == true && theirs["bearer"] == false)
        #expect(theirs["form"]?["authentication.userId"]?.stringValue == "8a8294174b7ecb28014b9699220015cc")
        #expect(theirs["form"]?["authentication.password"] == nil, "the simulator keeps no password")
        let ignored: Set<String> = ["entityId", "merchantTransactionId", "authentication.userId", "authentication.entityId",
                                    "customParameters[SHOPPER_pluginId]", "testMode"]
        #expect(Self.form(ours[0], without: ignored) == Self.form(theirs, without: ignored))
        #expect(ours[0]["form"]?["merchantTransactionId"]?.stringValue == "OPP-C1.PAYPIPE01")
        #expect(ours[0]["form"]?["entityId"]?.stringValue == Self.entity)
        for capture in [ours[0], theirs] {
            #expect(capture["contentType"]?.stringValue?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true)
        }
    }
}
}
