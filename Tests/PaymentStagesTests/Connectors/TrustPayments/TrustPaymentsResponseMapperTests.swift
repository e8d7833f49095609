import Foundation
import JWT
import PaymentDomain
@testable import PaymentStages
import Testing
import TrustPaymentsWire

/// Trust Payments answers → outcomes: every code class, the main-item rule, 3-D Secure redirects, response
/// validation, and TRANSACTIONQUERY verdicts.
@Suite struct TrustPaymentsResponseMapperTests {
    @Test("error code 0 authorises", arguments: ["0"])
    func authorized(code: String) {
        #expect(TrustPaymentsResponseMapper.outcome(forErrorCode: code) == .authorized)
    }

    @Test("issuer and 3-D Secure refusals are declines", arguments: ["70000", "60022", "60042", "71000", "72000", "88888"])
    func declined(code: String) {
        #expect(TrustPaymentsResponseMapper.outcome(forErrorCode: code) == .declined)
    }

    @Test("request errors are permanent", arguments: [
        "30000", "30001", "30006", "30007", "30010", "30999", "10300", "10301", "10302", "60018", "60025", "60040",
        "10003", "10100", "10101", "10102", "10103", "10205", "10600", "20004", "20007", "20011", "20015", "20018", "20040",
    ])
    func permanent(code: String) {
        #expect(TrustPaymentsResponseMapper.outcome(forErrorCode: code) == .permanentError)
    }

    @Test("transport, queued and unknown answers are uncertain",
          arguments: ["50000", "50005", "50014", "60010", "70001", "79000", "99999", "12345", "20016", "20017", "20041", "50015", "abc", "", "-1"])
    func uncertain(code: String) {
        #expect(TrustPaymentsResponseMapper.outcome(forErrorCode: code) == .uncertain)
    }

    /// No source says a locked record (79001) or a generic retry (88000) was not processed: query before resending.
    @Test("locked records and generic retries are uncertain", arguments: ["79001", "88000"])
    func lockedAndGenericRetryAreUncertain(code: String) {
        #expect(TrustPaymentsResponseMapper.outcome(forErrorCode: code) == .uncertain)
    }

    static func authItem(settleStatus: String?, amount: String = "1000", currency: String = "GBP") -> JSONValue {
        var item: JSONValue = ["requesttypedescription": "AUTH", "errorcode": "0", "errormessage": "Ok", "transactionreference": "1-2-3",
                               "baseamount": .string(amount), "currencyiso3a": .string(currency)]
        if let settleStatus { item.set(.string(settleStatus), forKey: "settlestatus") }
        return item
    }

    @Test("settlestatus decides what errorcode 0 means", arguments: [
        ("0", GatewayOutcome.authorized, String?.none), ("1", .authorized, nil), ("10", .authorized, nil), ("100", .authorized, nil),
        ("3", .declined, "gateway_cancelled"), ("2", .needsReview, "gateway_suspended"), ("7", .uncertain, "gateway_settlestatus_unknown"),
    ])
    func settleStatus(status: String, outcome: GatewayOutcome, reason: String?) {
        let result = TrustPaymentsResponseMapper.result(fromItem: Self.authItem(settleStatus: status))
        #expect(result.outcome == outcome)
        #expect(result.reason == reason)
        if let reason { #expect(TerminalDecision(result).errorCode == reason) }
    }

    @Test func anAuthWithoutSettleStatusStaysAuthorised() {
        #expect(TrustPaymentsResponseMapper.result(fromItem: Self.authItem(settleStatus: nil)).outcome == .authorized)
    }

    static func queryClaims(_ records: [JSONValue]) -> JSONValue {
        ["payload": ["version": "1.00", "response": [["requesttypedescription": "TRANSACTIONQUERY", "errorcode": "0",
                                                     "found": .string(String(records.count)), "records": .array(records)]]]]
    }

    @Test func aQueryAdoptsOnlyTheOneRecordThatMatchesThePayment() {
        let expected = TransactionQueryResult.Expected(amountMinor: 1000, currency: "GBP")
        let one = TrustPaymentsResponseMapper.queryResult(fromClaims: Self.queryClaims([Self.authItem(settleStatus: "0")]), expected: expected)
        guard case .found(let adopted) = one else {
            Issue.record("not adopted: \(one)")
            return
        }
        #expect(adopted.transactionReference == "1-2-3")
        let two = TrustPaymentsResponseMapper.queryResult(
            fromClaims: Self.queryClaims([Self.authItem(settleStatus: "0"), Self.authItem(settleStatus: "3")]), expected: expected)
        #expect(two == .inconclusive(code: "paypipe.query_ambiguous", reason: "2 AUTH records for one payment's reference"))
        for mismatch in [Self.authItem(settleStatus: "0", amount: "1001"), Self.authItem(settleStatus: "0", currency: "EUR")] {
            guard case .inconclusive(let code, _) = TrustPaymentsResponseMapper.queryResult(fromClaims: Self.queryClaims([mismatch]), expected: expected) else {
                Issue.record("a mismatching record was adopted")
                continue
            }
            #expect(code == "paypipe.query_mismatch")
        }
    }

    @Test func manualInvestigationHoldsForReview() {
        #expect(TrustPaymentsResponseMapper.outcome(forErrorCode: "60034") == .needsReview)
    }

    @Test func mainItemIsTheCustomerOutputElseTheLast() {
        let first: JSONValue = ["requesttypedescription": "THREEDQUERY", "errorcode": "0"]
        let result: JSONValue = ["requesttypedescription": "AUTH", "errorcode": "70000", "customeroutput": "RESULT"]
        let trailing: JSONValue = ["requesttypedescription": "RISKDEC", "errorcode": "0"]
        #expect(TrustPaymentsResponseMapper.mainItem([first, result, trailing]) == result)
        #expect(TrustPaymentsResponseMapper.mainItem([first, trailing]) == trailing)
        #expect(TrustPaymentsResponseMapper.mainItem([]) == nil)
    }

    static func claims(_ items: [JSONValue], version: JSONValue = "1.00") -> JSONValue {
        ["iat": 1, "payload": ["version": version, "response": .array(items)]]
    }

    @Test func authorisedAnswerCarriesItsReferences() {
        let item: JSONValue = [
            "requesttypedescription": "AUTH", "errorcode": "0", "errormessage": "Ok", "transactionreference": "1-2-3",
            "settlestatus": "0", "acquirerresponsecode": "00", "authcode": "TEST44", "maskedpan": "411111######1111",
            "customeroutput": "RESULT",
        ]
        let result = TrustPaymentsResponseMapper.result(fromClaims: Self.claims([item]))
        #expect(result == GatewayResult(
            outcome: .authorized, errorCode: "0", errorMessage: "Ok", transactionReference: "1-2-3", settleStatus: "0",
            acquirerResponseCode: "00", authCode: "TEST44", maskedPan: "411111######1111"))
    }

    @Test func invalidFieldNamesTheField() {
        let item: JSONValue = ["errorcode": "30000", "errormessage": "Invalid field", "errordata": ["pan"]]
        let result = TrustPaymentsResponseMapper.result(fromClaims: Self.claims([item]))
        #expect(result.outcome == .permanentError)
        #expect(result.errorData == ["pan"])
        #expect(result.failureDetail.contains("pan"))
        #expect(result.failureCode == "gateway_30000")
    }

    @Test func threeDRedirectIsADeclineWithReason() {
        let item: JSONValue = ["requesttypedescription": "THREEDQUERY", "errorcode": "0", "customeroutput": "THREEDREDIRECT"]
        let result = TrustPaymentsResponseMapper.result(fromClaims: Self.claims([item, ["requesttypedescription": "AUTH", "errorcode": "0"]]))
        #expect(result.outcome == .declined)
        #expect(result.reason == "3ds_challenge_required")
        #expect(result.failureCode == "3ds_challenge_required")
    }

    @Test func malformedResponsesAreUncertain() {
        #expect(TrustPaymentsResponseMapper.result(fromClaims: Self.claims([])).outcome == .uncertain)
        #expect(TrustPaymentsResponseMapper.result(fromClaims: Self.claims([["errorcode": "0"]], version: "2.00")).outcome == .uncertain)
        #expect(TrustPaymentsResponseMapper.result(fromClaims: ["payload": "x"]).errorCode == "paypipe.invalid_response")
        // An item without an errorcode proves nothing.
        #expect(TrustPaymentsResponseMapper.result(fromClaims: Self.claims([["customeroutput": "RESULT"]])).outcome == .uncertain)
    }

    static func query(_ records: [JSONValue], code: String = "0", found: String? = nil) -> JSONValue {
        var item: JSONValue = ["requesttypedescription": "TRANSACTIONQUERY", "errorcode": .string(code), "records": .array(records)]
        if let found { item.set(.string(found), forKey: "found") }
        return claims([item])
    }

    @Test func queryAdoptsTheRecordedAuth() {
        let record: JSONValue = ["requesttypedescription": "AUTH", "errorcode": "0", "transactionreference": "9-9-1"]
        guard case .found(let result) = TrustPaymentsResponseMapper.queryResult(fromClaims: Self.query([record], found: "1")) else {
            Issue.record("expected found")
            return
        }
        #expect(result.outcome == .authorized)
        #expect(result.transactionReference == "9-9-1")
        let declined: JSONValue = ["requesttypedescription": "AUTH", "errorcode": "70000"]
        #expect(TrustPaymentsResponseMapper.queryResult(fromClaims: Self.query([declined])) == .found(GatewayResult(outcome: .declined, errorCode: "70000")))
    }

    @Test func onlyASuccessfulEmptyQueryMeansNotFound() {
        #expect(TrustPaymentsResponseMapper.queryResult(fromClaims: Self.query([], found: "0")) == .notFound)
        #expect(TrustPaymentsResponseMapper.queryResult(fromClaims: Self.query([])) == .notFound)
        if case .inconclusive = TrustPaymentsResponseMapper.queryResult(fromClaims: Self.query([], code: "50000", found: "0")) {} else {
            Issue.record("a failed query must be inconclusive")
        }
        // No source shows a `found` member: only the records list counts.
        #expect(TrustPaymentsResponseMapper.queryResult(fromClaims: Self.query([], found: "2")) == .notFound)
        if case .inconclusive = TrustPaymentsResponseMapper.queryResult(fromClaims: Self.query([["requesttypedescription": "AUTH", "errorcode": "99999"]])) {} else {
            Issue.record("a record with an uncertain outcome must be inconclusive")
        }
        if case .inconclusive = TrustPaymentsResponseMapper.queryResult(fromClaims: Self.claims([])) {} else {
            Issue.record("an empty response must be inconclusive")
        }
    }

    @Test func httpStatusesMap() {
        #expect(TrustPaymentsClient.statusFailure(200) == nil)
        // A proxy's 503 can come after it forwarded the request.
        #expect(TrustPaymentsClient.statusFailure(503)?.outcome == .uncertain)
        #expect(TrustPaymentsClient.statusFailure(401)?.outcome == .permanentError)
        #expect(TrustPaymentsClient.statusFailure(500)?.outcome == .uncertain)
        #expect(TrustPaymentsClient.statusFailure(502)?.outcome == .uncertain)
    }

    @Test func envelopeAndQueryShape() {
        let envelope = TrustPaymentsClient.envelope(jwt: "a.b.c", alias: "user", requestTypes: ["AUTH"], requestId: "A1")
        #expect(envelope.serializedString == #"{"alias":"user","jwt":"a.b.c","version":"1.00","acceptcustomeroutput":"2.00","request":[{"requesttypedescriptions":["AUTH"],"requestid":"A1"}]}"#)
        let endpoint = GatewayEndpoint(baseUrl: "http://127.0.0.1:9180/", siteReference: "test_site1", jwtUsername: "user", secret: "s")
        #expect(endpoint.jwtURL == "http://127.0.0.1:9180/jwt/")
        #expect(!endpoint.description.contains("\"s\""))
        let query = TrustPaymentsClient.queryClaims(orderReference: "ORDER-1", endpoint: endpoint)
        #expect(query["payload"]?.serializedString == #"{"requesttypedescriptions":["TRANSACTIONQUERY"],"filter":{"sitereference":[{"value":"test_site1"}],"orderreference":[{"value":"ORDER-1"}]}}"#)
    }

    static func inconclusiveCode(_ result: TransactionQueryResult) -> String? {
        guard case .inconclusive(let code, _) = result else { return nil }
        return code
    }

    /// Records as a list in any order; no list, a record without a type, or an AUTH record without errorcode is
    /// inconclusive; a record for another order reference is never adopted.
    @Test func queryRecordsAreReadAsTheDocumentedList() {
        let auth: JSONValue = ["requesttypedescription": "AUTH", "errorcode": "0", "transactionreference": "9-9-2", "orderreference": "O-1"]
        let refund: JSONValue = ["requesttypedescription": "REFUND", "errorcode": "0", "transactionreference": "9-9-3"]
        let expected = TransactionQueryResult.Expected(amountMinor: nil, currency: nil, orderReference: "O-1")
        for records in [[auth, refund], [refund, auth]] {
            guard case .found(let result) = TrustPaymentsResponseMapper.queryResult(fromClaims: Self.query(records), expected: expected) else {
                Issue.record("the AUTH record must be found wherever it is in the list")
                continue
            }
            #expect(result.transactionReference == "9-9-2")
        }
        #expect(TrustPaymentsResponseMapper.queryResult(fromClaims: Self.query([refund])) == .notFound)
        let noList = Self.claims([["requesttypedescription": "TRANSACTIONQUERY", "errorcode": "0", "found": "0"]])
        #expect(Self.inconclusiveCode(TrustPaymentsResponseMapper.queryResult(fromClaims: noList)) == "paypipe.query_unrecognised")
        #expect(Self.inconclusiveCode(TrustPaymentsResponseMapper.queryResult(fromClaims: Self.query([["errorcode": "0"]]))) == "paypipe.query_unrecognised")
        #expect(Self.inconclusiveCode(TrustPaymentsResponseMapper.queryResult(fromClaims: Self.query([["requesttypedescription": "AUTH", "transactionreference": "9"]])))
            == "paypipe.query_record_without_errorcode")
        let other = TransactionQueryResult.Expected(amountMinor: nil, currency: nil, orderReference: "O-2")
        #expect(Self.inconclusiveCode(TrustPaymentsResponseMapper.queryResult(fromClaims: Self.query([auth]), expected: other)) == "paypipe.query_mismatch")
    }

    /// Every code the mapper names is one Trust Payments' Python SDK lists (its data/errormessages.json, copied to
    /// Tests/Fixtures/trustpayments), and every listed code keeps the class the issue gives it.
    @Test func mappedCodesAreTheSDKsOwn() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Fixtures/trustpayments/errormessages.json")
        let listed = try #require(try JSONValue.parse(Array(Data(contentsOf: url))).objectValue).compactMap { Int($0.key) }
        let named = TrustPaymentsResponseMapper.declinedCodes.union(TrustPaymentsResponseMapper.permanentCodes).union(TrustPaymentsResponseMapper.uncertainCodes)
            .union(TrustPaymentsResponseMapper.reviewCodes)
        #expect(named.subtracting(listed).sorted() == [], "codes mapped that the SDK does not list")
        for code in listed {
            let outcome = TrustPaymentsResponseMapper.outcome(forErrorCode: String(code))
            switch code {
            case 0: #expect(outcome == .authorized)
            case 88888: #expect(outcome == .declined, "Soft Decline retry")
            case 10003, 10100...10103, 10205, 10600, 20004...20040, 30000...30999, 60018, 60025, 60040: #expect(outcome == .permanentError, "\(code)")
            default: break
            }
        }
    }
}

/// The `webservices` transport's pure parts: the envelope as the Python SDK encodes it, the request reference, and
/// which failures may be retried.
@Suite struct WebservicesTransportTests {
    @Test func envelopeIsTheSDKs() {
        let envelope = TrustPaymentsClient.webservicesEnvelope(request: ["requesttypedescriptions": ["AUTH"], "baseamount": "100"], alias: "ws@example", requestReference: "A1-abc")
        #expect(envelope.serializedString == #"{"alias":"ws@example","version":"1.00","request":[{"requesttypedescriptions":["AUTH"],"baseamount":"100","requestreference":"A1-abc","versioninfo":"\#(TrustPaymentsClient.versionInfo)"}],"libraryversion":"paypipe_1.0","acceptcustomeroutput":"2.00"}"#)
        let endpoint = GatewayEndpoint(baseUrl: "https://webservices.securetrading.net/", siteReference: "test_site1", transport: .webservices, username: "ws", secret: "pw")
        #expect(endpoint.url == "https://webservices.securetrading.net/json/")
        #expect(!endpoint.description.contains("pw"))
    }

    @Test func requestReferencesAreFresh() {
        let references = (0..<50).map { _ in TrustPaymentsClient.requestReference("Q7") }
        #expect(Set(references).count == 50)
        #expect(references.allSatisfy { $0.hasPrefix("Q7-") && $0.count == 11 })
    }

    /// Retried only while nothing can have been sent, within the connect budget and the SDK's 6 retries.
    @Test func onlyConnectionFailuresAreRetried() {
        let transport = WebservicesTransport()
        #expect(transport.mayRetry(.couldNotConnect("refused"), tries: 1, elapsed: 0))
        #expect(transport.mayRetry(.timedOut(afterSending: false), tries: 2, elapsed: 3))
        #expect(transport.mayRetry(.connectionReset(afterSending: false), tries: 2, elapsed: 3))
        #expect(!transport.mayRetry(.timedOut(afterSending: true), tries: 1, elapsed: 0))
        #expect(!transport.mayRetry(.connectionReset(afterSending: true), tries: 1, elapsed: 0))
        #expect(!transport.mayRetry(.tooLarge, tries: 1, elapsed: 0))
        #expect(!transport.mayRetry(.tls("bad certificate"), tries: 1, elapsed: 0))
        #expect(!transport.mayRetry(.refusedBeforeSending("window"), tries: 1, elapsed: 0))
        #expect(!transport.mayRetry(.couldNotConnect("refused"), tries: 7, elapsed: 0))
        #expect(!transport.mayRetry(.couldNotConnect("refused"), tries: 1, elapsed: 9.6))
    }
}
