import Foundation
import HTTP
import JWT
@testable import PaymentStages
import Pipeline
import Testing

/// TapPay's wire format and mapping, pure: amounts, the Pay-by-Prime body (every key present), the status table
/// with its sources, the Record API's verdicts, the prime's age rule, and void unsupported.
@Suite struct TapPayConnectorTests {
    static let published = Date(timeIntervalSince1970: 1_735_689_600)
    static let prime = "ap_test_utigjeyfutj5867uyjhuty47rythfjru485768tigjfheufhtu5i6ojk"

    static func payment(_ amount: Int64 = 120_000, currency: String = "TWD") -> GatewayPaymentDetails {
        GatewayPaymentDetails(paymentId: AuthorizeClaimsTests.paymentId, orderReference: "ORDER-0003", amountMinor: amount, currency: currency)
    }

    static func data(prime: String? = prime) -> StoredPaymentData {
        var data = StoredPaymentData.tapPay(prime: prime ?? "", publishedAt: published, billingContact: AuthorizeClaimsTests.shippingContact, shippingContact: nil)
        data.tapPayPrime = prime
        return data
    }

    @Test("amounts: TWD in whole dollars, HKD/MYR/USD in cents", arguments: [
        (Int64(120_000), "TWD", Int64(1200)), (1200, "TWD", 12), (1050, "HKD", 1050), (1, "USD", 1), (999, "MYR", 999),
    ])
    func amounts(minor: Int64, currency: String, expected: Int64) throws {
        #expect(try TapPayWire.amount(minor: minor, currency: try #require(Currency.alpha3(currency))) == expected)
        #expect(TapPayWire.minorUnits(expected, currency: currency) == minor)
    }

    @Test("a TWD amount that is not whole dollars is not representable", arguments: [Int64(1), 1050, 120_001])
    func twdFractions(minor: Int64) throws {
        let twd = try #require(Currency.alpha3("TWD"))
        do {
            _ = try TapPayWire.amount(minor: minor, currency: twd)
            Issue.record("accepted \(minor)")
        } catch {
            #expect(error.code == "amount_not_representable")
        }
    }

    @Test func undocumentedCurrencyIsRefused() throws {
        #expect(throws: ConnectorBuildError.self) { try TapPayWire.amount(minor: 1000, currency: try #require(Currency.alpha3("EUR"))) }
    }

    @Test func payByPrimeBody() throws {
        let settings = TapPaySettings(merchantId: "example_merchant_CTBC", delayCaptureInDays: -1)
        let request = try TapPayWire.payByPrimeRequest(settings: settings, payment: Self.payment(), data: Self.data())
        let body = TapPayWire.payByPrimeBody(request, merchantId: "example_merchant_CTBC", partnerKey: "partner_xxx", reference: "ORDER-0003.6f1c2d3e4a5b")
        #expect(body.objectValue?.map(\.key) == ["partner_key", "merchant_id", "prime", "amount", "currency", "details", "order_number", "cardholder",
                                                 "remember", "delay_capture_in_days", "bank_transaction_id"])
        #expect(body["amount"] == .integer(1200))
        #expect(body["currency"]?.stringValue == "TWD")
        #expect(body["details"]?.stringValue == "Order ORDER-0003")
        #expect(body["order_number"]?.stringValue == "ORDER-0003")
        #expect(body["bank_transaction_id"]?.stringValue == "ORDER-0003.6f1c2d3e4a5b")
        #expect(body["delay_capture_in_days"] == .integer(-1))
        #expect(body["remember"] == .bool(false))
        // Every cardholder key, "" when unknown.
        let cardholder = try #require(body["cardholder"]?.objectValue)
        #expect(cardholder.map(\.key).sorted() == ["address", "email", "name", "national_id", "phone_number", "zip_code"])
        #expect(body["cardholder"]?["name"]?.stringValue == "Charles Babbage")
        #expect(body["cardholder"]?["email"]?.stringValue == "charles@example.com")
        #expect(body["cardholder"]?["national_id"]?.stringValue == "")
        // PayPipe's own member is stored, never sent.
        #expect(TapPayWire.primePublishedAt(request) == Self.published)
        #expect(!body.serializedString.contains("paypipe."))
        #expect(!"\(request)".contains(Self.prime))
    }

    @Test func payByPrimeNeedsThePrime() {
        #expect(throws: ConnectorBuildError.self) {
            try TapPayWire.payByPrimeRequest(settings: TapPaySettings(merchantId: "m"), payment: Self.payment(), data: Self.data(prime: nil))
        }
    }

    @Test("statuses and their sources", arguments: [
        (0, GatewayOutcome.authorized, String?.none), (91, .permanentError, "prime_expired"), (121, .permanentError, nil),
        (421, .uncertain, nil), (422, .uncertain, nil), (80, .permanentError, nil), (501, .permanentError, nil), (509, .permanentError, nil),
        (510, .permanentError, nil), (515, .permanentError, nil), (10003, .uncertain, nil), (-1, .uncertain, nil), (2, .uncertain, nil),
    ])
    func statuses(status: Int, outcome: GatewayOutcome, reason: String?) {
        #expect(TapPayStatus.outcome(status) == (outcome, reason))
        let result = TapPayWire.result(["status": .integer(Int64(status)), "msg": "m", "rec_trade_id": "D1"])
        #expect(result.outcome == outcome)
        #expect(result.failureCode == (reason ?? "gateway_\(status)"))
    }

    @Test func answersWithoutAnIntegerStatusAreUncertain() {
        for answer: JSONValue in [[:], ["status": "0"], ["status": 0.5]] {
            #expect(TapPayWire.result(answer).outcome == .uncertain)
        }
    }

    static let expected = TransactionQueryResult.Expected(amountMinor: 120_000, currency: "TWD", orderReference: "REF-1")

    static func records(_ records: [JSONValue], status: Int64 = 0) -> JSONValue {
        ["status": .integer(status), "msg": "", "trade_records": .array(records)]
    }

    static func record(_ status: Int64, reference: String = "REF-1", amount: Int64 = 1200) -> JSONValue {
        ["rec_trade_id": "D1", "bank_transaction_id": .string(reference), "amount": .integer(amount), "currency": "TWD", "record_status": .integer(status)]
    }

    @Test func recordVerdicts() {
        #expect(TapPayWire.queryResult(Self.records([], status: 2), expected: Self.expected) == .notFound)
        #expect(TapPayWire.queryResult(Self.records([]), expected: Self.expected) == .notFound)
        for (status, outcome) in [(Int64(-1), GatewayOutcome.declined), (0, .authorized), (1, .authorized), (3, .authorized), (5, .needsReview)] {
            guard case .found(let result) = TapPayWire.queryResult(Self.records([Self.record(status)]), expected: Self.expected) else {
                Issue.record("record_status \(status) not adopted")
                continue
            }
            #expect(result.outcome == outcome)
            #expect(result.transactionReference == "D1")
        }
        for answer in [Self.records([Self.record(0), Self.record(0)]), Self.records([Self.record(0, amount: 1201)])] {
            guard case .found(let review) = TapPayWire.queryResult(answer, expected: Self.expected) else {
                Issue.record("not reviewed")
                continue
            }
            #expect(review.failureCode == "gateway_query_ambiguous")
        }
        // Pending, a failed query, or records that are not this reference's (the filter was not applied): nothing proven.
        for answer in [Self.records([Self.record(4)]), Self.records([], status: 80), Self.records([Self.record(0, reference: "OTHER")]), ["status": 0] as JSONValue] {
            guard case .inconclusive = TapPayWire.queryResult(answer, expected: Self.expected) else {
                Issue.record("conclusive: \(answer.serializedString)")
                continue
            }
        }
    }

    @Test func recordQueryFiltersByReferenceWithinATimeWindow() {
        let now = Date(timeIntervalSince1970: 1_735_700_000)
        let query = TapPayWire.recordQuery(partnerKey: "k", reference: "REF-1", around: now)
        #expect(query["filters"]?["bank_transaction_id"]?.stringValue == "REF-1")
        let start = query["filters"]?["time"]?["start_time"]?.int64Value ?? 0
        let end = query["filters"]?["time"]?["end_time"]?.int64Value ?? 0
        #expect(start < 1_735_700_000_000 && 1_735_700_000_000 < end)
        #expect(query["records_per_page"] == .integer(200))
    }

    /// 90 s of life minus the call's timeout: with a 30 s timeout, a prime may be sent until it is 60 s old.
    @Test("the prime's age rule", arguments: [(0.0, true), (59.9, true), (60.0, false), (89.0, false), (-5.0, true)])
    func primeAge(age: Double, maySend: Bool) {
        #expect(TapPayPrimeAge.maySend(publishedAt: Self.published, now: Self.published.addingTimeInterval(age), callTimeout: 30) == maySend)
    }

    @Test func expiredPrimeIsNotSent() throws {
        let request = try TapPayWire.payByPrimeRequest(settings: TapPaySettings(merchantId: "m"), payment: Self.payment(), data: Self.data())
        let endpoint = GatewayEndpoint(baseUrl: "http://127.0.0.1:9", siteReference: "m", transport: .webservices, username: "", secret: "k", connector: .tapPay)
        // Port 9 (discard) is never reached: the rule refuses before any connection.
        let result = TapPayConnector(transport: CardDataTransportPolicy(deployment: .sandbox)).authorize(
            request, reference: "R", endpoint: endpoint, requestId: "A1", now: Self.published.addingTimeInterval(61), window: nil, using: HTTPClient())
        #expect(result.outcome == .permanentError)
        #expect(result.failureCode == "prime_expired")
    }

    /// The prime's kind decides its life: 90 s for an ordinary prime, 30 days for a deferred payment's [doc], each
    /// minus the call's timeout.
    static let kindAges: [(TapPayPrimeAge.Kind, Double, Bool)] = [
        (.ordinary, 59.9, true), (.ordinary, 60.0, false), (.ordinary, 86_400.0, false),
        (.deferred, 60.0, true), (.deferred, 86_400.0, true), (.deferred, 2_591_969.9, true),
        (.deferred, 2_591_970.0, false), (.deferred, 2_678_400.0, false),
    ]

    @Test("each prime kind's age rule", arguments: kindAges)
    func primeKindAge(kind: TapPayPrimeAge.Kind, age: Double, maySend: Bool) {
        #expect(TapPayPrimeAge.maySend(publishedAt: Self.published, now: Self.published.addingTimeInterval(age), callTimeout: 30, kind: kind) == maySend)
    }

    static let kindExpiries: [(TapPayPrimeAge.Kind, Double, Bool)] = [
        (.ordinary, 89.9, false), (.ordinary, 90.0, true), (.deferred, 86_400.0, false), (.deferred, 2_591_999.9, false), (.deferred, 2_592_000.0, true),
    ]

    @Test("expiry by kind", arguments: kindExpiries)
    func primeExpiry(kind: TapPayPrimeAge.Kind, age: Double, expired: Bool) {
        #expect(TapPayPrimeAge.hasExpired(publishedAt: Self.published, now: Self.published.addingTimeInterval(age), kind: kind) == expired)
    }

    /// A deferred prime's kind travels from the job through the stored data to the stored request, and is never sent.
    @Test func deferredPrimeKindIsStoredNotSent() throws {
        let base = #"{"jobId":"j1","merchantId":"m1","orderReference":"o1","amount":{"value":120000,"currency":"TWD"},"tapPayPrime":"ap_test_x""#
        let job = try PaymentJob.decode(Array((base + #","amountPending":true}"#).utf8))
        let stored = try #require(ConnectorRegistry.credentialData(job, publishedAt: Self.published))
        #expect(stored.tapPayPrimeKind == .deferred)
        // Through the sealed form's JSON and back.
        let decoded = try JSONDecoder().decode(StoredPaymentData.self, from: JSONEncoder().encode(stored))
        #expect(decoded.tapPayPrimeKind == .deferred && decoded.tapPayPrime == "ap_test_x" && decoded.tapPayPrimePublishedAt == Self.published)
        // And through the form card_data is sealed in (``StoredPaymentData/serialized()``).
        let opened = try StoredPaymentData(serialized: stored.serialized())
        #expect(opened.tapPayPrimeKind == .deferred && opened.tapPayPrime == "ap_test_x" && opened.tapPayPrimePublishedAt == Self.published)
        let ordinary = try #require(ConnectorRegistry.credentialData(try PaymentJob.decode(Array((base + "}").utf8)), publishedAt: Self.published))
        #expect(ordinary.tapPayPrimeKind == .ordinary)
        #expect(try !String(decoding: JSONEncoder().encode(ordinary), as: UTF8.self).contains("AmountPending"))
        #expect(!String(decoding: ordinary.serialized(), as: UTF8.self).contains("AmountPending"))

        let settings = TapPaySettings(merchantId: "m")
        let request = try TapPayWire.payByPrimeRequest(settings: settings, payment: Self.payment(), data: decoded)
        #expect(TapPayWire.primeKind(request) == .deferred)
        #expect(TapPayWire.primeKind(try TapPayWire.payByPrimeRequest(settings: settings, payment: Self.payment(), data: ordinary)) == .ordinary)
        let body = TapPayWire.payByPrimeBody(request, merchantId: "m", partnerKey: "k", reference: "R")
        #expect(body.objectValue?.contains { $0.key.hasPrefix("paypipe.") } == false)

        // A day-old deferred prime is not refused locally (the call reaches the discard port and fails to connect);
        // a 30-day-old one is refused before any connection.
        let endpoint = GatewayEndpoint(baseUrl: "http://127.0.0.1:9", siteReference: "m", transport: .webservices, username: "", secret: "k", connector: .tapPay)
        let connector = TapPayConnector(http: HTTPClientConfiguration(connectTimeout: 1, totalTimeout: 2), transport: CardDataTransportPolicy(deployment: .sandbox))
        let dayOld = connector.authorize(request, reference: "R", endpoint: endpoint, requestId: "A1",
                                         now: Self.published.addingTimeInterval(86_400), window: nil, using: HTTPClient())
        #expect(dayOld.failureCode != "prime_expired")
        let expired = connector.authorize(request, reference: "R", endpoint: endpoint, requestId: "A1",
                                          now: Self.published.addingTimeInterval(30 * 86_400), window: nil, using: HTTPClient())
        #expect(expired.outcome == .permanentError && expired.failureCode == "prime_expired")
    }

    /// Only TapPay declares deferred amounts, as data in its folder.
    @Test func onlyTapPayDeclaresDeferredAmounts() {
        #expect(ConnectorKind.allCases.filter(\.capabilities.deferredAmount) == [.tapPay])
    }

    @Test func voidIsNotSupported() throws {
        let endpoint = GatewayEndpoint(baseUrl: "http://127.0.0.1:9", siteReference: "m", transport: .webservices, username: "", secret: "k", connector: .tapPay)
        let result = TapPayConnector().perform(.void(transactionId: "D1"), endpoint: endpoint, requestId: "V1", now: Date(), window: nil, using: HTTPClient())
        #expect(result.failureCode == "operation_not_supported")
        #expect(!TapPayConnector.capabilities.supports(.void(transactionId: "D1")))
        #expect(TapPayConnector.capabilities.supports(.refund(transactionId: "D1", amountMinor: 1, currency: "TWD")))
        #expect(try TapPayWire.operationBody(.capture(transactionId: "D1", amountMinor: 100, currency: "TWD"), partnerKey: "k")?.path == "/tpc/transaction/cap")
        #expect(try TapPayWire.operationBody(.refund(transactionId: "D1", amountMinor: 500, currency: "TWD"), partnerKey: "k")?.body["amount"] == .integer(5))
    }
}

/// What decrypt does with a TapPay job: the connector must fit the job, and the replay key never holds the prime.
@Suite struct TapPayJobTests {
    @Test func jobsMustFitTheMerchantsConnector() throws {
        let token = #"{"paymentData":{"version":"EC_v1","data":"AA==","signature":"AA==","header":{"transactionId":"ab"}}}"#
        let base = #"{"jobId":"j1","merchantId":"m1","orderReference":"o1","amount":{"value":1200,"currency":"TWD"},"#
        let primeJob = try PaymentJob.decode(Array((base + #""tapPayPrime":"ap_test_x"}"#).utf8))
        let tokenJob = try PaymentJob.decode(Array((base + #""applePayToken":\#(token)}"#).utf8))
        #expect(TapPayJob.mismatch(primeJob, connector: .tapPay) == nil)
        #expect(TapPayJob.mismatch(tokenJob, connector: .opp) == nil)
        #expect(TapPayJob.mismatch(tokenJob, connector: nil) == nil)
        #expect(TapPayJob.mismatch(tokenJob, connector: .tapPay) != nil)
        #expect(TapPayJob.mismatch(primeJob, connector: .trustPayments) != nil)
        let key = TapPayJob.transactionId(prime: "ap_test_x")
        #expect(key.hasPrefix("tappay-prime:") && key.count == "tappay-prime:".count + 64)
        #expect(!key.contains("ap_test_x"))
        #expect(key != TapPayJob.transactionId(prime: "ap_test_y"))
        // Decrypt asks the registry, which answers for every connector: only the prime job has a credential.
        #expect(ConnectorRegistry.credentialReplayKey(primeJob) == key)
        #expect(ConnectorRegistry.credentialReplayKey(tokenJob) == nil)
        let published = Date(timeIntervalSince1970: 1_700_000_000)
        let stored = try #require(ConnectorRegistry.credentialData(primeJob, publishedAt: published))
        #expect(stored.tapPayPrime == "ap_test_x" && stored.tapPayPrimePublishedAt == published && stored.decrypted == nil)
        #expect(ConnectorRegistry.credentialData(tokenJob, publishedAt: published) == nil)
        #expect(ConnectorRegistry.jobMismatch(tokenJob, connector: .tapPay) == TapPayJob.mismatch(tokenJob, connector: .tapPay))
        #expect(ConnectorRegistry.jobMismatch(primeJob, connector: .opp) != nil)
        #expect(ConnectorRegistry.jobMismatch(tokenJob, connector: .opp) == nil)
        // The prime's SHA-256 in lower-case hex (hashlib.sha256(b"ap_test_prime").hexdigest()).
        #expect(TapPayJob.transactionId(prime: "ap_test_prime") == "tappay-prime:6f249de627a657abb6622b99b5952c11057e77f8203bb4221a00e46581c60d79")
    }
}
