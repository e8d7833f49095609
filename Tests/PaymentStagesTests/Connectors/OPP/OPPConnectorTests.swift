import ApplePay
import Foundation
import JWT
@testable import PaymentStages
import Pipeline
import Testing

/// OPP's wire format and mapping, pure: the result-code table in its order, test mode outside sandbox, amounts from
/// ISO 4217 exponents, the form bodies of both modes, the query's verdicts, and the back-office forms.
@Suite struct OPPConnectorTests {
    // MARK: Result codes

    @Test("the result-code table, group by group, in the issue's order", arguments: [
        // success (production: only non-test-mode codes)
        ("000.000.000", GatewayOutcome.authorized), ("000.000.100", .authorized), ("000.300.000", .authorized), ("000.600.000", .authorized),
        // review
        ("000.400.000", .needsReview), ("000.400.010", .needsReview), ("000.400.020", .needsReview), ("000.400.100", .needsReview),
        // pending
        ("000.200.000", .uncertain), ("000.200.100", .uncertain), ("800.400.500", .uncertain), ("100.400.500", .uncertain),
        // communication and system errors: 000.400.030 is not a review, 800.5/800.6 are not declines
        ("000.400.030", .uncertain), ("900.100.300", .uncertain), ("900.400.000", .uncertain), ("800.500.100", .uncertain),
        ("800.600.100", .uncertain), ("999.999.999", .uncertain), ("600.100.100", .uncertain), ("800.800.800", .uncertain),
        // bank declines, risk, 3-D Secure
        ("800.100.151", .declined), ("800.100.153", .declined), ("800.700.100", .declined), ("800.800.102", .declined),
        ("000.400.101", .declined), ("000.400.200", .declined), ("100.400.080", .declined), ("100.380.401", .declined),
        ("800.400.100", .declined), ("800.400.200", .declined), ("100.100.701", .declined), ("800.200.159", .declined),
        ("800.110.100", .declined), ("100.390.100", .declined), ("100.380.201", .declined),
        // validation
        ("600.200.100", .permanentError), ("500.100.201", .permanentError), ("800.121.100", .permanentError), ("100.150.100", .permanentError),
        ("700.400.100", .permanentError), ("200.300.404", .permanentError), ("100.800.100", .permanentError), ("100.700.100", .permanentError),
        ("100.100.100", .permanentError), ("100.550.300", .permanentError), ("800.900.300", .permanentError),
        // anything else
        ("000.100.200", .uncertain), ("100.396.101", .uncertain), ("123.456.789", .uncertain), ("800.100", .uncertain), ("", .uncertain),
        ("000.000.000 ", .uncertain),
    ])
    func resultCodes(code: String, expected: GatewayOutcome) {
        #expect(OPPResultCode.outcome(code, sandbox: false).outcome == expected, "\(code)")
    }

    @Test("test-mode success is authorised in sandbox only; outside it goes to review", arguments: ["000.100.110", "000.100.111", "000.100.112"])
    func testMode(code: String) {
        #expect(OPPResultCode.outcome(code, sandbox: true) == (.authorized, nil))
        #expect(OPPResultCode.outcome(code, sandbox: false) == (.needsReview, "gateway_test_mode"))
    }

    /// PAY.ON's own wrapper (PyPI `opp` 1.3.1, `opp/utils.py`, copied to Tests/Fixtures/opp) groups codes coarsely:
    /// nothing it calls rejected may be authorised or reviewed here, and nothing it calls successful may be declined or
    /// permanent (its successful group also holds pending, communication and chargeback codes, which stay uncertain).
    @Test func theWrappersGroupsAgree() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Fixtures/opp/opp-1.3.1-result-groups.json")
        let groups = try #require(try JSONValue.parse(Array(Data(contentsOf: url)))["groups"]?.objectValue)
        #expect(groups.count == 5)
        for (group, codes) in groups {
            for code in try #require(codes.arrayValue).compactMap(\.stringValue) {
                let outcome = OPPResultCode.outcome(code, sandbox: true).outcome
                if group == "SUCCESSFUL" {
                    #expect([.authorized, .needsReview, .uncertain].contains(outcome), "\(code) (\(group)) → \(outcome)")
                } else {
                    #expect(![.authorized, .needsReview].contains(outcome), "\(code) (\(group)) → \(outcome)")
                }
            }
        }
    }

    // MARK: Amounts

    @Test("amounts are decimal strings by the currency's exponent", arguments: [
        (Int64(2000), "GBP", "20.00"), (5, "EUR", "0.05"), (100, "USD", "1.00"), (1500, "KWD", "1.500"), (1, "BHD", "0.001"),
        (99_999_999_999, "EUR", "999999999.99"),
    ])
    func amounts(minor: Int64, currency: String, expected: String) throws {
        let code = try #require(Currency.alpha3(currency))
        #expect(try OPPWire.amount(minor: minor, currency: code) == expected)
        #expect(OPPWire.minorUnits(expected, currency: code) == minor)
    }

    @Test("zero-exponent currencies are refused until OPP's format for them is confirmed", arguments: ["JPY", "KRW", "CLP", "ISK"])
    func zeroExponent(currency: String) throws {
        let code = try #require(Currency.alpha3(currency))
        #expect(throws: ConnectorBuildError(code: "amount_not_representable",
                                            reason: "OPP's amount format for zero-exponent currencies (\(currency)) is unconfirmed")) {
            try OPPWire.amount(minor: 500, currency: code)
        }
    }

    @Test("amount strings not in the currency's exact form are not read", arguments: ["20", "20.0", "20.000", ".50", "1e3", "-1.00", "20,00", "٢٠.٠٠"])
    func malformedAmounts(text: String) throws {
        #expect(OPPWire.minorUnits(text, currency: try #require(Currency.alpha3("GBP"))) == nil)
    }

    // MARK: Form encoding

    @Test func formEncodingRoundTrips() throws {
        let fields: [(key: String, value: String)] = [("card.number", "4111"), ("applePay.paymentToken", #"{"a":"b c+d/é"}"#), ("empty", "")]
        let encoded = OPPWire.formEncode(fields)
        #expect(encoded == "card.number=4111&applePay.paymentToken=%7B%22a%22%3A%22b+c%2Bd%2F%C3%A9%22%7D&empty=")
        let decoded = try #require(OPPWire.formDecode(encoded))
        #expect(decoded.map(\.key) == fields.map(\.key))
        #expect(decoded.map(\.value) == fields.map(\.value))
        #expect(OPPWire.formDecode("a=%ZZ") == nil)
        #expect(OPPWire.formDecode("a=%C3") == nil)
    }

    // MARK: Requests

    static let payment = GatewayPaymentDetails(paymentId: AuthorizeClaimsTests.paymentId, orderReference: "ORDER-0001", amountMinor: 1050, currency: "GBP")

    @Test func merchantDecryptsForm() throws {
        let settings = OPPSettings(entityId: "8a8294174b7ecb28014b9699220015ca", paymentBrand: "VISA", paymentType: "PA")
        let request = try OPPWire.authorizationRequest(settings: settings, mode: .merchantDecrypts, payment: Self.payment, data: AuthorizeClaimsTests.stored())
        #expect(request.requestTypes == ["PA"])
        let form = OPPWire.paymentForm(request, entityId: settings.entityId, reference: "ORDER-0001.6f1c2d3e4a5b")
        #expect(form.map(\.key) == ["entityId", "amount", "currency", "paymentType", "paymentBrand", "card.number", "card.expiryMonth",
                                    "card.expiryYear", "threeDSecure.verificationId", "threeDSecure.eci", "applePay.source", "merchantTransactionId"])
        #expect(form.map(\.value) == ["8a8294174b7ecb28014b9699220015ca", "10.50", "GBP", "PA", "VISA", AuthorizeClaimsTests.pan, "12", "2029",
                                      AuthorizeClaimsTests.cryptogram, "7", "app", "ORDER-0001.6f1c2d3e4a5b"])
        // The stored request's description never shows the DPAN or the cryptogram.
        #expect(!"\(request)".contains(AuthorizeClaimsTests.pan))
        #expect(!"\(request)".contains(AuthorizeClaimsTests.cryptogram))
    }

    @Test func gatewayDecryptsForm() throws {
        let request = try OPPWire.authorizationRequest(
            settings: OPPSettings(entityId: "entity1"), mode: .gatewayDecrypts, payment: Self.payment,
            data: AuthorizeClaimsTests.stored(card: nil, walletToken: AuthorizeClaimsTests.walletToken))
        let form = OPPWire.paymentForm(request, entityId: "entity1", reference: "REF-00000001")
        #expect(form.map(\.key) == ["entityId", "amount", "currency", "paymentType", "paymentBrand", "applePay.paymentToken", "merchantTransactionId"])
        #expect(form[3].value == "DB")
        #expect(form[4].value == "APPLEPAY")
        let token = try JSONValue.parse(Array(form[5].value.utf8))
        #expect(token["version"]?.stringValue == "EC_v1")
        #expect(token["header"]?["transactionId"]?.stringValue == "ab/cd")
    }

    @Test("settings each mode refuses", arguments: [
        (OPPSettings(entityId: "e1", paymentBrand: "APPLEPAYTKN"), MerchantDocument.Gateway.Mode.merchantDecrypts),
        (OPPSettings(entityId: "e1", paymentBrand: "VISA"), .gatewayDecrypts),
        (OPPSettings(entityId: "e1", paymentType: "CP"), .merchantDecrypts),
        (OPPSettings(entityId: "", paymentType: "DB"), .gatewayDecrypts),
        (OPPSettings(entityId: "e 1"), .gatewayDecrypts),
    ])
    func refusedSettings(settings: OPPSettings, mode: MerchantDocument.Gateway.Mode) {
        #expect(settings.problem(mode: mode) != nil)
        #expect(throws: ConnectorBuildError.self) {
            try OPPWire.authorizationRequest(settings: settings, mode: mode, payment: Self.payment, data: AuthorizeClaimsTests.stored())
        }
    }

    @Test func zeroExponentPaymentFailsAmountNotRepresentable() {
        let payment = GatewayPaymentDetails(paymentId: AuthorizeClaimsTests.paymentId, orderReference: "O", amountMinor: 1050, currency: "JPY")
        do {
            _ = try OPPWire.authorizationRequest(settings: OPPSettings(entityId: "e1"), mode: .gatewayDecrypts, payment: payment,
                                                 data: AuthorizeClaimsTests.stored(card: nil, walletToken: AuthorizeClaimsTests.walletToken))
            Issue.record("built")
        } catch {
            #expect(error.code == "amount_not_representable")
        }
    }

    @Test func backOfficeForms() throws {
        let capture = try OPPWire.operationForm(.capture(transactionId: "8ac7a4a1", amountMinor: 1050, currency: "GBP"), entityId: "e1")
        #expect(capture.path == "/v1/payments/8ac7a4a1")
        #expect(capture.form.map(\.key) == ["entityId", "amount", "currency", "paymentType"])
        #expect(capture.form.map(\.value) == ["e1", "10.50", "GBP", "CP"])
        #expect(try OPPWire.operationForm(.refund(transactionId: "x", amountMinor: 5, currency: "EUR"), entityId: "e1").form.last?.value == "RF")
        let void = try OPPWire.operationForm(.void(transactionId: "a/b"), entityId: "e1")
        #expect(void.path == "/v1/payments/a%2Fb")
        #expect(void.form.map(\.value) == ["e1", "RV"])
        #expect(OPPWire.queryPath(entityId: "e1", reference: "ORDER 1") == "/v3/query?entityId=e1&merchantTransactionId=ORDER+1")
    }

    // MARK: Answers

    static func record(_ code: String, type: String = "DB", reference: String = "REF-1", amount: String = "10.50") -> JSONValue {
        ["id": "8ac7", "paymentType": .string(type), "amount": .string(amount), "currency": "GBP", "merchantTransactionId": .string(reference),
         "result": ["code": .string(code), "description": "d"]]
    }

    static func query(_ records: [JSONValue], code: String = "000.000.100") -> JSONValue {
        ["result": ["code": .string(code), "description": "successful request"], "payments": .array(records)]
    }

    static let expected = TransactionQueryResult.Expected(amountMinor: 1050, currency: "GBP", orderReference: "REF-1")

    @Test func answers() {
        let authorised = OPPWire.result(Self.record("000.000.000"), sandbox: false)
        #expect(authorised.outcome == .authorized)
        #expect(authorised.transactionReference == "8ac7")
        #expect(OPPWire.result(Self.record("800.100.151"), sandbox: false).failureCode == "gateway_800.100.151")
        #expect(OPPWire.result(Self.record("000.100.110"), sandbox: false).failureCode == "gateway_test_mode")
        #expect(OPPWire.result(["id": "x"], sandbox: false).outcome == .uncertain)
        #expect(OPPWire.result(["result": ["code": 7]], sandbox: false).outcome == .uncertain)
    }

    /// Issue 40, defect 1: OPP answers a reference it holds nothing under with HTTP 404 and `700.400.580`; only that
    /// pair is "not found" (for the AUTH's query and an operation's). Any other 4xx/5xx, or the code on another status,
    /// stays inconclusive.
    @Test func oppsNotFoundIsHTTP404WithCannotFindTransaction() throws {
        let notFound: JSONValue = ["result": ["code": "700.400.580", "description": "cannot find transaction"], "buildNumber": "b", "timestamp": "t"]
        #expect(OPPWire.queryResult(notFound, status: 404, expected: Self.expected, sandbox: false) == .notFound)
        #expect(OPPWire.operationEvidence(notFound, status: 404, reference: "REF-1-op1", transactionId: "8ac7", currency: "GBP", sandbox: false)
            == .success(.transactions([])))
        let other: [(JSONValue, Int)] = [
            (notFound, 400), (notFound, 200), (notFound, 500),
            (["result": ["code": "800.900.300", "description": "user authorization failed"]], 404),
            (["result": ["code": "200.300.404", "description": "invalid or missing parameter"]], 400),
            (["result": ["code": "800.120.100", "description": "Rejected by Throttling."]], 429),
        ]
        for (answer, status) in other {
            guard case .inconclusive = OPPWire.queryResult(answer, status: status, expected: Self.expected, sandbox: false) else {
                Issue.record("conclusive: \(status) \(answer.serializedString)")
                continue
            }
            guard case .failure = OPPWire.operationEvidence(answer, status: status, reference: "REF-1-op1", transactionId: "8ac7", currency: "GBP", sandbox: false) else {
                Issue.record("operation evidence from \(status) \(answer.serializedString)")
                continue
            }
        }
    }

    @Test func queryVerdicts() throws {
        #expect(OPPWire.queryResult(Self.query([]), expected: Self.expected, sandbox: false) == .notFound)
        // A back-office operation under the reference is not an authorisation.
        #expect(OPPWire.queryResult(Self.query([Self.record("000.000.000", type: "RF")]), expected: Self.expected, sandbox: false) == .notFound)
        guard case .found(let found) = OPPWire.queryResult(Self.query([Self.record("800.100.151")]), expected: Self.expected, sandbox: false) else {
            Issue.record("not found")
            return
        }
        #expect(found.outcome == .declined)
        // Two authorisations under one payment's reference, or one that is not this payment's: review, never adopted.
        for records in [[Self.record("000.000.000"), Self.record("000.000.000", type: "PA")], [Self.record("000.000.000", amount: "10.51")],
                        [Self.record("000.000.000", reference: "REF-2")]] {
            guard case .found(let review) = OPPWire.queryResult(Self.query(records), expected: Self.expected, sandbox: false) else {
                Issue.record("not reviewed")
                continue
            }
            #expect(review.outcome == .needsReview)
            #expect(review.failureCode == "gateway_query_ambiguous")
        }
        // Pending or communication-error records, failed queries and answers without a list prove nothing.
        for answer in [Self.query([Self.record("000.200.000")]), Self.query([Self.record("900.100.300")]), Self.query([], code: "800.900.300"),
                       ["result": ["code": "000.000.100"]] as JSONValue, ["payments": []] as JSONValue] {
            guard case .inconclusive = OPPWire.queryResult(answer, expected: Self.expected, sandbox: false) else {
                Issue.record("conclusive: \(answer.serializedString)")
                continue
            }
        }
    }
}

/// A hostile peer's answers (wrong types, huge values) never crash a connector and never read as an outcome they do not
/// state: recorded values are capped, anything unreadable is uncertain.
@Suite struct HostileConnectorAnswerTests {
    static let huge = String(repeating: "x", count: 100_000)

    @Test func oppAnswers() {
        let capped = OPPWire.result(["id": .string(Self.huge), "result": ["code": "000.000.000", "description": .string(Self.huge)],
                                     "resultDetails": ["AuthCode": .string(Self.huge)], "card": ["bin": .string(Self.huge), "last4Digits": 4]], sandbox: false)
        #expect(capped.outcome == .authorized)
        #expect((capped.transactionReference?.count ?? 0) <= 64 && (capped.errorMessage?.count ?? 0) <= 500 && (capped.authCode?.count ?? 0) <= 16)
        #expect(capped.maskedPan == nil)
        for answer: JSONValue in [["result": "000.000.000"], ["result": ["code": ["000.000.000"]]], ["result": ["code": .string(Self.huge)]], .array([]), "text"] {
            #expect(OPPWire.result(answer, sandbox: true).outcome == .uncertain, "\(answer.serializedString.prefix(80))")
        }
        for answer: JSONValue in [["result": ["code": "000.000.100"], "payments": "none"], ["result": ["code": "000.000.100"], "payments": [["paymentType": 1]]]] {
            guard case .inconclusive = OPPWire.queryResult(answer, expected: OPPConnectorTests.expected, sandbox: false) else {
                Issue.record("conclusive: \(answer.serializedString)")
                continue
            }
        }
    }

    @Test func tapPayAnswers() {
        let capped = TapPayWire.result(["status": 0, "msg": .string(Self.huge), "rec_trade_id": .string(Self.huge), "auth_code": .string(Self.huge)])
        #expect(capped.outcome == .authorized)
        #expect((capped.transactionReference?.count ?? 0) <= 64 && (capped.errorMessage?.count ?? 0) <= 500 && (capped.authCode?.count ?? 0) <= 16)
        for answer: JSONValue in [["status": .string("0")], ["status": 1e300], ["status": .integer(Int64.max)], ["status": .null], .array([])] {
            #expect(TapPayWire.result(answer).outcome == .uncertain, "\(answer.serializedString)")
        }
        guard case .inconclusive = TapPayWire.queryResult(["status": 0, "trade_records": "none"], expected: TapPayConnectorTests.expected) else {
            Issue.record("a malformed record list was read")
            return
        }
    }
}
