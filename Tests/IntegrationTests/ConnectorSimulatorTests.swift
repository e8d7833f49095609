import ApplePay
import Foundation
import HTTP
import JWT
@testable import PaymentStages
import PayPipeDevTools
import Pipeline
import Testing

extension Integration {
/// The OPP and TapPay connectors against the simulator's faces over real HTTP (no database): authorise, decline,
/// reconcile a lost answer by the reference, refuse before sending, back-office operations, and the faces' validation.
@Suite struct ConnectorSimulatorTests {
    static let entity = "8a8294174b7ecb28014b9699220015ca"
    static let token = "opp-sim-token"
    static let partner = "partner_sim"
    static let merchant = "example_merchant_CTBC"
    static let http = HTTPClientConfiguration(connectTimeout: 1, totalTimeout: 3)
    static let opp = OPPConnector(http: http, transport: .init(deployment: .sandbox))
    static let tapPay = TapPayConnector(http: http, transport: .init(deployment: .sandbox))

    static func withSimulator(_ body: (GatewaySimulator) throws -> Void) throws {
        var configuration = GatewaySimulatorConfiguration(port: 0, merchants: [:], slowResponseSeconds: 0, threads: 2)
        configuration.oppTokens = [token: entity]
        configuration.oppUsers = ["legacy-user": "legacy-password"]
        configuration.tapPayPartners = [partner: merchant]
        let simulator = GatewaySimulator(configuration: configuration)
        try simulator.start()
        defer { simulator.stop() }
        try body(simulator)
    }

    static func oppEndpoint(_ simulator: GatewaySimulator, token: String = token) -> GatewayEndpoint {
        GatewayEndpoint(baseUrl: simulator.baseURL, siteReference: entity, transport: .webservices, username: "", secret: token, connector: .opp)
    }

    static func tapPayEndpoint(_ simulator: GatewaySimulator) -> GatewayEndpoint {
        GatewayEndpoint(baseUrl: simulator.baseURL, siteReference: merchant, transport: .webservices, username: "", secret: partner, connector: .tapPay)
    }

    static func oppRequest(_ amount: Int64, type: String = "DB", mode: MerchantDocument.Gateway.Mode = .merchantDecrypts) throws -> GatewayRequest {
        let payment = GatewayPaymentDetails(paymentId: UUID(), orderReference: "ORDER-1", amountMinor: amount, currency: "GBP")
        let data = StoredPaymentData(
            decrypted: DecryptedPaymentDataFixture.card(amount: amount), walletToken: mode == .gatewayDecrypts ? DecryptedPaymentDataFixture.walletToken : nil,
            paymentMethodDisplayName: nil, paymentMethodNetwork: nil, billingContact: nil, shippingContact: nil)
        return try OPPWire.authorizationRequest(settings: OPPSettings(entityId: entity, paymentType: type), mode: mode, payment: payment, data: data)
    }

    static func expected(_ amount: Int64, _ reference: String, currency: String = "GBP") -> TransactionQueryResult.Expected {
        TransactionQueryResult.Expected(amountMinor: amount, currency: currency, orderReference: reference)
    }

    @Test func oppAuthorisesDeclinesAndReconcilesALostAnswer() throws {
        try Self.withSimulator { simulator in
            let endpoint = Self.oppEndpoint(simulator)
            let client = HTTPClient(configuration: Self.http)
            let authorised = Self.opp.authorize(try Self.oppRequest(1050), reference: "REF-OPP-0001", endpoint: endpoint, requestId: "A1", now: Date(), window: nil, using: client)
            #expect(authorised.outcome == .authorized)
            #expect(authorised.errorCode == "000.000.000")
            #expect(authorised.maskedPan == "411111######1111")
            let declined = Self.opp.authorize(try Self.oppRequest(1051), reference: "REF-OPP-0002", endpoint: endpoint, requestId: "A2", now: Date(), window: nil, using: client)
            #expect(declined.outcome == .declined)
            #expect(declined.failureCode == "gateway_800.100.151")
            // Recorded, then the connection dropped: uncertain, and the query by merchantTransactionId adopts the record.
            let lost = Self.opp.authorize(try Self.oppRequest(1096), reference: "REF-OPP-0003", endpoint: endpoint, requestId: "A3", now: Date(), window: nil, using: client)
            #expect(lost.outcome == .uncertain)
            guard case .found(let found) = Self.opp.find(reference: "REF-OPP-0003", endpoint: endpoint, expected: Self.expected(1096, "REF-OPP-0003"),
                                                        requestId: "Q3", now: Date(), using: client) else {
                Issue.record("lost answer not found")
                return
            }
            #expect(found.outcome == .authorized)
            #expect(Self.opp.find(reference: "REF-OPP-NONE", endpoint: endpoint, expected: Self.expected(1000, "REF-OPP-NONE"), requestId: "Q4", now: Date(),
                                  using: client) == .notFound)
            // Gateway-decrypts: APPLEPAY with applePay.paymentToken.
            let token = Self.opp.authorize(try Self.oppRequest(1200, mode: .gatewayDecrypts), reference: "REF-OPP-0005", endpoint: endpoint, requestId: "A5",
                                           now: Date(), window: nil, using: client)
            #expect(token.outcome == .authorized)
            #expect(simulator.ledger.authCount(orderReference: "REF-OPP-0003") == 1)
            #expect(simulator.ledger.totalAuths == 4)
        }
    }

    @Test func oppRefusesBeforeSending() throws {
        try Self.withSimulator { simulator in
            let client = HTTPClient(configuration: Self.http)
            // Card data never goes over plain HTTP outside sandbox.
            let strict = OPPConnector(http: Self.http, transport: .strict)
            let insecure = strict.authorize(try Self.oppRequest(1000), reference: "REF-OPP-0010", endpoint: Self.oppEndpoint(simulator), requestId: "A10",
                                            now: Date(), window: nil, using: client)
            #expect(insecure.errorCode == "paypipe.insecure_gateway_url")
            // A send window already passed: certainly not sent.
            let late = SendWindow(seconds: 0, from: ContinuousClock.now.advanced(by: .seconds(-1)), wallClock: Date())
            let refused = Self.opp.authorize(try Self.oppRequest(1000), reference: "REF-OPP-0011", endpoint: Self.oppEndpoint(simulator), requestId: "A11",
                                             now: Date(), window: late, using: client)
            #expect(refused.outcome == .transient)
            #expect(refused.errorCode == "paypipe.send_window")
            // A wrong token: the face's 800.900.300, a validation error.
            let unauthorised = Self.opp.authorize(try Self.oppRequest(1000), reference: "REF-OPP-0012", endpoint: Self.oppEndpoint(simulator, token: "wrong"),
                                                  requestId: "A12", now: Date(), window: nil, using: client)
            #expect(unauthorised.outcome == .permanentError)
            #expect(unauthorised.errorCode == "800.900.300")
            #expect(simulator.ledger.totalAuths == 0)
        }
    }

    @Test func oppBackOffice() throws {
        try Self.withSimulator { simulator in
            let endpoint = Self.oppEndpoint(simulator)
            let client = HTTPClient(configuration: Self.http)
            let authorised = Self.opp.authorize(try Self.oppRequest(2000, type: "PA"), reference: "REF-OPP-0020", endpoint: endpoint, requestId: "A20", now: Date(),
                                                window: nil, using: client)
            let id = try #require(authorised.transactionReference)
            func perform(_ operation: ConnectorOperation) -> GatewayResult {
                Self.opp.perform(operation, endpoint: endpoint, requestId: "O", now: Date(), window: nil, using: client)
            }
            let capture = perform(.capture(transactionId: id, amountMinor: 1500, currency: "GBP"))
            #expect(capture.outcome == .authorized)
            let captureId = try #require(capture.transactionReference)
            // A captured pre-authorisation is refunded by its capture's id (docs/connectors.md), never by its own.
            #expect(perform(.refund(transactionId: id, amountMinor: 500, currency: "GBP")).outcome == .permanentError)
            #expect(perform(.refund(transactionId: captureId, amountMinor: 500, currency: "GBP")).outcome == .authorized)
            // More than captured, or a reversal after capture: refused by the face (a reference validation code).
            #expect(perform(.refund(transactionId: captureId, amountMinor: 1001, currency: "GBP")).outcome == .permanentError)
            #expect(perform(.void(transactionId: id)).outcome == .permanentError)
            let other = Self.opp.authorize(try Self.oppRequest(2000, type: "PA"), reference: "REF-OPP-0021", endpoint: endpoint, requestId: "A21", now: Date(),
                                           window: nil, using: client)
            #expect(perform(.void(transactionId: try #require(other.transactionReference))).outcome == .authorized)
        }
    }

    /// `GET /_sim/payments`, what chaos runs compare with PayPipe's payments: each face's money per authorisation in
    /// minor units, so a refund that took effect twice shows as twice the amount refunded.
    @Test func everyFaceExportsTheMoneyEachAuthorisationMoved() throws {
        try Self.withSimulator { simulator in
            let client = HTTPClient(configuration: Self.http)
            let opp = Self.oppEndpoint(simulator), tapPay = Self.tapPayEndpoint(simulator)
            let captured = try #require(Self.opp.authorize(try Self.oppRequest(2000, type: "PA"), reference: "REF-OPP-0030", endpoint: opp, requestId: "A30",
                                                           now: Date(), window: nil, using: client).transactionReference)
            let reversed = try #require(Self.opp.authorize(try Self.oppRequest(2000, type: "PA"), reference: "REF-OPP-0031", endpoint: opp, requestId: "A31",
                                                           now: Date(), window: nil, using: client).transactionReference)
            let trade = try #require(Self.tapPay.authorize(try Self.tapPayRequest(100_000), reference: "REF-TP-0030", endpoint: tapPay, requestId: "A32",
                                                           now: Date(), window: nil, using: client).transactionReference)
            let capture = Self.opp.perform(.capture(transactionId: captured, amountMinor: 1500, currency: "GBP"), endpoint: opp, requestId: "O", now: Date(),
                                           window: nil, using: client)
            #expect(capture.outcome == .authorized)
            let captureId = try #require(capture.transactionReference)
            // A captured pre-authorisation is refunded by its capture's id (docs/connectors.md), not by its own.
            #expect(Self.opp.perform(.refund(transactionId: captured, amountMinor: 500, currency: "GBP"), endpoint: opp, requestId: "O", now: Date(),
                                     window: nil, using: client).outcome == .permanentError)
            for operation in [ConnectorOperation.refund(transactionId: captureId, amountMinor: 500, currency: "GBP"),
                              .refund(transactionId: captureId, amountMinor: 500, currency: "GBP"), .void(transactionId: reversed)] {
                #expect(Self.opp.perform(operation, endpoint: opp, requestId: "O", now: Date(), window: nil, using: client).outcome == .authorized)
            }
            #expect(Self.tapPay.perform(.refund(transactionId: trade, amountMinor: 40_000, currency: "TWD"), endpoint: tapPay, requestId: "O", now: Date(),
                                        window: nil, using: client).outcome == .authorized)
            let answer = try client.send(HTTPRequest(url: simulator.baseURL + "/_sim/payments"))
            #expect(answer.status == 200)
            let entries = try #require(try JSONValue.parse(answer.body)["payments"]?.arrayValue)
            func entry(_ reference: String) -> JSONValue? { entries.first { $0["reference"]?.stringValue == reference } }
            #expect(entry("REF-OPP-0030")?["face"]?.stringValue == "opp")
            #expect(entry("REF-OPP-0030")?["refunded"]?.int64Value == 1000)
            #expect(entry("REF-OPP-0030")?["captured"]?.int64Value == 1500)
            #expect(entry("REF-OPP-0030")?["voided"] == .bool(false))
            #expect(entry("REF-OPP-0031")?["voided"] == .bool(true))
            #expect(entry("REF-TP-0030")?["face"]?.stringValue == "tappay")
            #expect(entry("REF-TP-0030")?["amount"]?.int64Value == 100_000)
            #expect(entry("REF-TP-0030")?["refunded"]?.int64Value == 40_000)
            // The other faces' authorisations are not repeated as Trust Payments ones.
            #expect(entries.count == 3)
        }
    }

    static func tapPayRequest(_ minor: Int64, prime: String = "ap_test_utigjeyfutj5867uyjhuty47rythfjru485768tigjfheufhtu5i6ojk",
                              published: Date = Date()) throws -> GatewayRequest {
        let payment = GatewayPaymentDetails(paymentId: UUID(), orderReference: "ORDER-3", amountMinor: minor, currency: "TWD")
        return try TapPayWire.payByPrimeRequest(
            settings: TapPaySettings(merchantId: merchant), payment: payment,
            data: .tapPay(prime: prime, publishedAt: published, billingContact: nil, shippingContact: nil))
    }

    @Test func tapPayAuthorisesDeclinesAndReconcilesALostAnswer() throws {
        try Self.withSimulator { simulator in
            let endpoint = Self.tapPayEndpoint(simulator)
            let client = HTTPClient(configuration: Self.http)
            let authorised = Self.tapPay.authorize(try Self.tapPayRequest(120_000), reference: "REF-TP-0001", endpoint: endpoint, requestId: "A1", now: Date(),
                                                   window: nil, using: client)
            #expect(authorised.outcome == .authorized)
            #expect(authorised.transactionReference?.isEmpty == false)
            // A bank decline has no documented status: uncertain, and the Record API tells the decline.
            let declined = Self.tapPay.authorize(try Self.tapPayRequest(105_100, prime: "sim_\(Int64(Date().timeIntervalSince1970 * 1000))_a"),
                                                 reference: "REF-TP-0002", endpoint: endpoint, requestId: "A2", now: Date(), window: nil, using: client)
            #expect(declined.outcome == .uncertain)
            guard case .found(let record) = Self.tapPay.find(reference: "REF-TP-0002", endpoint: endpoint, expected: Self.expected(105_100, "REF-TP-0002", currency: "TWD"),
                                                            requestId: "Q2", now: Date(), using: client) else {
                Issue.record("decline not found")
                return
            }
            #expect(record.outcome == .declined)
            let lost = Self.tapPay.authorize(try Self.tapPayRequest(109_600, prime: "sim_\(Int64(Date().timeIntervalSince1970 * 1000))_b"),
                                             reference: "REF-TP-0003", endpoint: endpoint, requestId: "A3", now: Date(), window: nil, using: client)
            #expect(lost.outcome == .uncertain)
            guard case .found(let adopted) = Self.tapPay.find(reference: "REF-TP-0003", endpoint: endpoint, expected: Self.expected(109_600, "REF-TP-0003", currency: "TWD"),
                                                             requestId: "Q3", now: Date(), using: client) else {
                Issue.record("lost answer not found")
                return
            }
            #expect(adopted.outcome == .authorized)
            #expect(Self.tapPay.find(reference: "REF-TP-NONE", endpoint: endpoint, expected: Self.expected(100, "REF-TP-NONE", currency: "TWD"), requestId: "Q4",
                                     now: Date(), using: client) == .notFound)
            #expect(simulator.ledger.authCount(orderReference: "REF-TP-0003") == 1)
        }
    }

    @Test func tapPayPrimeRules() throws {
        try Self.withSimulator { simulator in
            let endpoint = Self.tapPayEndpoint(simulator)
            let client = HTTPClient(configuration: Self.http)
            let prime = "sim_\(Int64(Date().timeIntervalSince1970 * 1000))_once"
            #expect(Self.tapPay.authorize(try Self.tapPayRequest(100_000, prime: prime), reference: "REF-TP-0010", endpoint: endpoint, requestId: "A",
                                          now: Date(), window: nil, using: client).outcome == .authorized)
            // Single use: TapPay's 121.
            let reused = Self.tapPay.authorize(try Self.tapPayRequest(100_000, prime: prime), reference: "REF-TP-0011", endpoint: endpoint, requestId: "A",
                                               now: Date(), window: nil, using: client)
            #expect(reused.failureCode == "gateway_121")
            // Expired at TapPay (91), and too old to send at all (never reaches the face).
            let stale = "sim_\(Int64(Date().timeIntervalSince1970 * 1000) - 120_000)_old"
            let expired = Self.tapPay.authorize(try Self.tapPayRequest(100_000, prime: stale), reference: "REF-TP-0012", endpoint: endpoint, requestId: "A",
                                                now: Date(), window: nil, using: client)
            #expect(expired.failureCode == "prime_expired")
            #expect(expired.errorCode == "91")
            let old = Self.tapPay.authorize(try Self.tapPayRequest(100_000, published: Date().addingTimeInterval(-88)), reference: "REF-TP-0013",
                                            endpoint: endpoint, requestId: "A", now: Date(), window: nil, using: client)
            #expect(old.failureCode == "prime_expired")
            #expect(old.errorCode == "paypipe.prime_expired")
            #expect(simulator.ledger.totalAuths == 1)
        }
    }

    @Test func tapPayCaptureRefundAndNoVoid() throws {
        try Self.withSimulator { simulator in
            let endpoint = Self.tapPayEndpoint(simulator)
            let client = HTTPClient(configuration: Self.http)
            let authorised = Self.tapPay.authorize(try Self.tapPayRequest(100_000), reference: "REF-TP-0020", endpoint: endpoint, requestId: "A", now: Date(),
                                                   window: nil, using: client)
            let id = try #require(authorised.transactionReference)
            func perform(_ operation: ConnectorOperation) -> GatewayResult {
                Self.tapPay.perform(operation, endpoint: endpoint, requestId: "O", now: Date(), window: nil, using: client)
            }
            // Captured automatically (no delay_capture_in_days): capturing again is refused.
            #expect(perform(.capture(transactionId: id, amountMinor: 100_000, currency: "TWD")).outcome != .authorized)
            #expect(perform(.refund(transactionId: id, amountMinor: 40_000, currency: "TWD")).outcome == .authorized)
            #expect(perform(.refund(transactionId: id, amountMinor: 70_000, currency: "TWD")).outcome == .permanentError)
            #expect(perform(.void(transactionId: id)).failureCode == "operation_not_supported")
        }
    }
}
}

/// A decrypted Apple Pay card (GBP) and a token, for the connectors' requests.
enum DecryptedPaymentDataFixture {
    static let walletToken = #"{"paymentData":{"version":"EC_v1","data":"c2VhbGVk","signature":"c2ln","header":{"transactionId":"ab"}}}"#

    static func card(amount: Int64) -> DecryptedPaymentData {
        DecryptedPaymentData(
            applicationPrimaryAccountNumber: "4111111111111111", applicationExpirationDate: "291231", currencyCode: "826",
            transactionAmount: amount, deviceManufacturerIdentifier: "040010030273", paymentDataType: "3DSecure",
            paymentData: .init(onlinePaymentCryptogram: "AgAAAAAABk4DWZ4C28yUQAAAAAA=", eciIndicator: "7"))
    }
}

extension Integration {
/// Trust Payments behind the connector protocol: the same AUTH as its own entry point, and capture, void and refund as
/// the operations lifecycle's TRANSACTIONUPDATE and REFUND.
@Suite struct TrustPaymentsConnectorTests {
    @Test func operationsAreTheLifecyclesRequests() {
        #expect(TrustPaymentsClient.gatewayOperation(.capture(transactionId: "1-2-3", amountMinor: 500, currency: "GBP"))
                == .capture(transactionReference: "1-2-3", amount: 500))
        #expect(TrustPaymentsClient.gatewayOperation(.void(transactionId: "1-2-3")) == .void(transactionReference: "1-2-3"))
        #expect(TrustPaymentsClient.gatewayOperation(.refund(transactionId: "1-2-3", amountMinor: 500, currency: "GBP")) == .refund(parentTransactionReference: "1-2-3", amount: 500))
    }

    @Test func authoriseFindAndVoidOverWebservices() throws {
        let simulator = GatewaySimulator(configuration: GatewaySimulatorConfiguration(port: 0, merchants: [:], webservicesUsers: ["ws": "pw"], slowResponseSeconds: 0, threads: 2))
        try simulator.start()
        defer { simulator.stop() }
        let endpoint = GatewayEndpoint(baseUrl: simulator.baseURL, siteReference: "test_site1", transport: .webservices, username: "ws", secret: "pw")
        let connector: any GatewayConnector = TrustPaymentsClient(http: HTTPClientConfiguration(connectTimeout: 1, totalTimeout: 3), transport: .init(deployment: .sandbox))
        let request = GatewayRequest(orderReference: "TP-1", requestTypes: ["AUTH"], claims: ["iss": "ws", "iat": 0, "payload": [
            "accounttypedescription": "ECOM", "sitereference": "test_site1", "currencyiso3a": "GBP", "baseamount": "1000", "orderreference": "TP-1",
            "requesttypedescriptions": ["AUTH"], "pan": "4111111111111111", "expirydate": "07/2030",
        ]])
        let client = HTTPClient()
        let authorised = connector.authorize(request, reference: "TP-1.abcdef012345", endpoint: endpoint, requestId: "A1", now: Date(), window: nil, using: client)
        #expect(authorised.outcome == .authorized)
        // The per-payment reference replaced the stored one.
        #expect(simulator.ledger.authCount(orderReference: "TP-1.abcdef012345") == 1)
        guard case .found = connector.find(reference: "TP-1.abcdef012345", endpoint: endpoint, expected: .init(amountMinor: 1000, currency: "GBP", orderReference: "TP-1.abcdef012345"),
                                           requestId: "Q1", now: Date(), using: client) else {
            Issue.record("not found")
            return
        }
        let voided = connector.perform(.void(transactionId: try #require(authorised.transactionReference)), endpoint: endpoint, requestId: "V1", now: Date(),
                                       window: nil, using: client)
        #expect(voided.outcome == .authorized, "\(voided)")
        #expect(simulator.ledger.records(orderReference: "TP-1.abcdef012345").first?["settlestatus"]?.stringValue == "3")
    }
}
}

extension Integration {
/// TapPay's documented request and response example (Tests/Fixtures/tappay, from other-gateways.md §1 [doc][sdk]):
/// PayPipe's body has the example's keys (plus its reconciliation key), the connector reads the example answer, and the
/// simulator's face accepts the example request as TapPay documents it.
@Suite struct TapPayDocumentedExampleTests {
    static func example() throws -> JSONValue {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/tappay/pay-by-prime-example.json")
        return try JSONValue.parse(Array(Data(contentsOf: url)))
    }

    @Test func payPipeSpeaksTheExample() throws {
        let example = try Self.example()
        let documented = try #require(example["request"]?.objectValue)
        let payment = GatewayPaymentDetails(paymentId: UUID(), orderReference: "ORDER-0003", amountMinor: 1200, currency: "TWD")
        let request = try TapPayWire.payByPrimeRequest(
            settings: TapPaySettings(merchantId: "example_merchant_CTBC"), payment: payment,
            data: .tapPay(prime: "ap_test_utigjeyfutj5867uyjhuty47rythfjru485768tigjfheufhtu5i6ojk", publishedAt: Date(),
                          billingContact: ["givenName": "Test", "familyName": "User", "emailAddress": "t@example.com", "phoneNumber": "+886900000000"],
                          shippingContact: nil))
        let body = TapPayWire.payByPrimeBody(request, merchantId: "example_merchant_CTBC", partnerKey: "partner_xxx", reference: "ORDER-0003.0123456789ab")
        #expect(Set((body.objectValue ?? []).map(\.key)) == Set(documented.map(\.key)).union(["bank_transaction_id"]))
        for (key, value) in documented {
            #expect(body[key] == value, "\(key): \(body[key]?.serializedString ?? "absent") vs the example's \(value.serializedString)")
        }
        let answer = TapPayWire.result(try #require(example["response"]))
        #expect(answer.outcome == .authorized)
        #expect(answer.transactionReference == "D20250101abcd12")
        #expect(answer.authCode == "123456")
        #expect(answer.maskedPan == "424242######4242")
    }

    @Test func theFaceAcceptsTheExample() throws {
        var configuration = GatewaySimulatorConfiguration(port: 0, merchants: [:], slowResponseSeconds: 0, threads: 2)
        configuration.tapPayPartners = ["partner_xxx": "example_merchant_CTBC"]
        let simulator = GatewaySimulator(configuration: configuration)
        try simulator.start()
        defer { simulator.stop() }
        let request = try #require(try Self.example()["request"])
        let response = try HTTPClient().send(HTTPRequest(method: "POST", url: simulator.baseURL + TapPayWire.payByPrimePath, headers: [
            HTTPHeader(name: "Content-Type", value: "application/json"), HTTPHeader(name: "x-api-key", value: "partner_xxx"),
        ], body: request.serialized()))
        let answer = try JSONValue.parse(response.body)
        #expect(answer["status"] == .integer(0), "\(answer.serializedString)")
        #expect(answer["rec_trade_id"]?.stringValue?.isEmpty == false)
        #expect(answer["card_info"]?["last_four"]?.stringValue == "4242")
        // Without the cardholder's email: 509, as TapPay's error page lists.
        var missing = request
        var cardholder = try #require(request["cardholder"])
        cardholder.set(.null, forKey: "email")
        missing.set(cardholder, forKey: "cardholder")
        let refused = try JSONValue.parse(HTTPClient().send(HTTPRequest(method: "POST", url: simulator.baseURL + TapPayWire.payByPrimePath, headers: [
            HTTPHeader(name: "x-api-key", value: "partner_xxx"),
        ], body: missing.serialized())).body)
        #expect(refused["status"] == .integer(509))
    }
}
}
