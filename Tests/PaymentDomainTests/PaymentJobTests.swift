import Foundation
import Testing
import JSON
@testable import PaymentDomain

@Suite struct PaymentJobTests {
    static let token = #"{"paymentData":{"version":"EC_v1","data":"AA==","signature":"AA==","header":{"transactionId":"ab"}}}"#

    /// The sample job with `overrides` (a JSON object; `null` removes a field) merged in.
    static func body(json overrides: String) -> [UInt8] {
        let object = try! JSONSerialization.jsonObject(with: Data(overrides.utf8)) as! [String: Any]
        return body(object.mapValues { $0 is NSNull ? nil : $0 })
    }

    static func body(_ overrides: [String: Any?] = [:]) -> [UInt8] {
        var object: [String: Any] = [
            "jobId": "job-1", "merchantId": "m1", "orderReference": "order-1",
            "amount": ["value": 1099, "currency": "GBP"],
            "applePayToken": try! JSONSerialization.jsonObject(with: Data(token.utf8)),
            "somethingNew": ["ignored": true],
        ]
        for (key, value) in overrides { object[key] = value }
        return Array(try! JSONSerialization.data(withJSONObject: object))
    }

    @Test func decodesTheContractAndIgnoresUnknownFields() throws {
        let job = try PaymentJob.decode(Self.body(["metadata": ["cart": "42"], "notifyUrl": "https://shop.example/hook"]))
        #expect(job.jobId == "job-1")
        #expect(job.merchantId == "m1")
        #expect(job.amount == .init(value: 1099, currency: Currency.alpha3("GBP")!))
        #expect(job.metadata == ["cart": "42"])
        #expect(job.notifyURL == "https://shop.example/hook")
        #expect(String(decoding: job.applePayToken, as: UTF8.self).contains("EC_v1"))
    }

    /// `applicationData` is base64 of the app's exact bytes, part of the content hash; absent leaves the hash of jobs
    /// that never had it unchanged; anything but a base64 string is an invalid job.
    /// `captureMode` / `captureWithin` (docs/operations-lifecycle.md): decoded and validated on the job's own terms,
    /// hashed only when present (a job without them keeps the hash it had before the fields existed).
    @Test func captureModeAndCaptureWithin() throws {
        let plain = try PaymentJob.decode(Self.body())
        #expect(plain.captureMode == nil && plain.captureWithin == nil)
        #expect(plain.contentHash == PaymentJob.contentHash(try JSONValue.parse(Self.body())))
        let manual = try PaymentJob.decode(Self.body(["captureMode": "manual", "captureWithin": "P7D"]))
        #expect(manual.captureMode == .manual && manual.captureWithin == "P7D")
        #expect(manual.contentHash != plain.contentHash)
        #expect(try PaymentJob.decode(Self.body(["captureMode": "automatic"])).captureMode == .automatic)
        for (overrides, reason) in [
            (["captureMode": "later"], "captureMode"), (["captureMode": 1], "captureMode"),
            (["captureWithin": "P7D"], "captureWithin needs"), (["captureMode": "automatic", "captureWithin": "P7D"], "captureWithin needs"),
            (["captureMode": "manual", "captureWithin": "P1M"], "ISO 8601"), (["captureMode": "manual", "captureWithin": "P32D"], "31 days"),
        ] as [([String: Any?], String)] {
            #expect(throws: PaymentJob.DecodingError.self, "\(overrides)") { try PaymentJob.decode(Self.body(overrides)) }
            do {
                _ = try PaymentJob.decode(Self.body(overrides))
            } catch {
                #expect("\(error)".contains(reason), "\(overrides): \(error)")
            }
        }
    }

    @Test func applicationDataIsDecodedAndHashed() throws {
        let without = try PaymentJob.decode(Self.body())
        let with = try PaymentJob.decode(Self.body(["applicationData": Data("order-42".utf8).base64EncodedString()]))
        let explicitNull = try PaymentJob.decode(Self.body(json: #"{"applicationData": null}"#))
        #expect(without.applicationData == nil)
        #expect(with.applicationData == Array("order-42".utf8))
        #expect(with.contentHash != without.contentHash)
        #expect(explicitNull.contentHash != with.contentHash)
        for bad: Any in ["not base64!", 42, ["a"], String(repeating: "A", count: 65_540)] {
            #expect(throws: PaymentJob.DecodingError.self) { try PaymentJob.decode(Self.body(["applicationData": bad])) }
        }
    }

    /// A TapPay merchant's job carries the prime instead of the token; exactly one of the two.
    @Test func tapPayPrimeReplacesTheToken() throws {
        let prime = "ap_test_utigjeyfutj5867uyjhuty47rythfjru485768tigjfheufhtu5i6ojk"
        let job = try PaymentJob.decode(Self.body(["applePayToken": nil, "tapPayPrime": prime]))
        #expect(job.tapPayPrime == prime)
        #expect(job.applePayToken.isEmpty)
        #expect(try PaymentJob.decode(Self.body()).tapPayPrime == nil)
        // The prime is a contract field: another prime is another job's content.
        let other = try PaymentJob.decode(Self.body(["applePayToken": nil, "tapPayPrime": prime + "x"]))
        #expect(other.contentHash != job.contentHash)
        for bad: Any in ["", String(repeating: "p", count: 72), "has space", 42, ["prime": prime]] {
            #expect(throws: PaymentJob.DecodingError.self) { try PaymentJob.decode(Self.body(["applePayToken": nil, "tapPayPrime": bad])) }
        }
        // Both, or neither.
        #expect(throws: PaymentJob.DecodingError.self) { try PaymentJob.decode(Self.body(["tapPayPrime": prime])) }
        #expect(throws: PaymentJob.DecodingError.self) { try PaymentJob.decode(Self.body(["applePayToken": nil])) }
    }

    /// `amountPending` (TapPay's deferred payment): strictly a boolean, null as absent, hashed only when present.
    @Test func amountPendingIsAStrictBoolean() throws {
        let prime = "ap_test_utigjeyfutj5867uyjhuty47rythfjru485768tigjfheufhtu5i6ojk"
        let plain = try PaymentJob.decode(Self.body(["applePayToken": nil, "tapPayPrime": prime]))
        #expect(!plain.amountPending)
        let pending = try PaymentJob.decode(Self.body(["applePayToken": nil, "tapPayPrime": prime, "amountPending": true]))
        #expect(pending.amountPending)
        #expect(pending.contentHash != plain.contentHash)
        // null reads as absent (as for every member, a null present is part of the content); false is accepted.
        #expect(try !PaymentJob.decode(Self.body(["applePayToken": nil, "tapPayPrime": prime, "amountPending": NSNull()])).amountPending)
        #expect(try !PaymentJob.decode(Self.body(["applePayToken": nil, "tapPayPrime": prime, "amountPending": false])).amountPending)
        for bad: Any in ["true", 1, ["pending": true]] {
            do {
                _ = try PaymentJob.decode(Self.body(["applePayToken": nil, "tapPayPrime": prime, "amountPending": bad]))
                Issue.record("accepted amountPending \(bad)")
            } catch {
                guard case .invalid(_, _, _, let reason) = error else { Issue.record("unaddressed: \(error)"); continue }
                #expect(reason.contains("amountPending"))
            }
        }
    }

    @Test func tokenMayBeAJSONString() throws {
        let job = try PaymentJob.decode(Self.body(["applePayToken": Self.token]))
        #expect(job.applePayToken == Array(Self.token.utf8))
    }

    /// The content hash moved from JSONSerialization to the JSON module: the canonical bytes must be the same, or jobs
    /// stored before the change would look like `idempotency_conflict`s when redelivered.
    @Test(arguments: [
        Self.token,
        #"{"b":1,"a":"x/y","C":[true,null,{"z":"\"q\"","Y":"é\n"}],"item10":1,"item9":2,"Apple":0,"apple2":3}"#,
        #"{"metadata":{"Cart":"1","cart2":"2","_id":"3","ID":"4"},"amount":{"value":1099,"currency":"GBP"}}"#,
    ])
    func canonicalFormMatchesJSONSerialization(json: String) throws {
        let foundation = try JSONSerialization.data(
            withJSONObject: try JSONSerialization.jsonObject(with: Data(json.utf8)), options: [.sortedKeys, .withoutEscapingSlashes])
        #expect(JobBody.canonicalJSON(try JSONValue.parse(json)) == Array(foundation))
    }

    /// The fast path for letter-only keys orders every pair exactly as Foundation's comparison does.
    @Test func letterKeyFastPathAgreesWithFoundation() {
        var generator = SystemRandomNumberGenerator()
        let letters = Array("aAbByYzZmM")
        var keys = ["jobId", "merchantId", "amount", "applePayToken", "paymentData", "header", "ephemeralPublicKey",
                    "publicKeyHash", "transactionId", "signature", "version", "data", "paymentMethod", "displayName", "network",
                    "type", "notifyUrl", "billingContact", "shippingContact", "orderReference", "metadata", "value", "currency", ""]
        for _ in 0..<300 {
            keys.append(String((0..<Int.random(in: 1...5, using: &generator)).map { _ in letters.randomElement(using: &generator)! }))
        }
        var decided = 0
        for a in keys {
            for b in keys {
                let foundation = a.compare(b, options: [.numeric, .caseInsensitive, .forcedOrdering], range: a.startIndex..<a.endIndex,
                                           locale: NSLocale.system) == .orderedAscending
                #expect(FoundationKeyOrder.areInIncreasingOrder(a, b) == foundation, "\(a) < \(b)")
                if let fast = FoundationKeyOrder.asciiLetterOrder(a, b) {
                    decided += 1
                    #expect(fast == foundation, "\(a) < \(b)")
                }
            }
        }
        #expect(decided > keys.count * keys.count / 2)  // the fast path does decide most pairs
        #expect(FoundationKeyOrder.asciiLetterOrder("item9", "item10") == nil)  // digits: Foundation's numeric order
        #expect(FoundationKeyOrder.asciiLetterOrder("Key", "key") == nil)  // equal ignoring case: forced ordering
    }

    @Test func hashIgnoresKeyOrderAndUnknownFieldsButNotContent() throws {
        let a = try PaymentJob.decode(Self.body())
        let b = try PaymentJob.decode(Self.body(["somethingNew": "changed"]))
        let reordered = try PaymentJob.decode(Array(#"{"amount":{"currency":"GBP","value":1099},"orderReference":"order-1","merchantId":"m1","jobId":"job-1","applePayToken":\#(Self.token)}"#.utf8))
        let different = try PaymentJob.decode(Self.body(["amount": ["value": 1100, "currency": "GBP"]]))
        #expect(a.contentHash == b.contentHash)
        #expect(a.contentHash == reordered.contentHash)
        #expect(a.contentHash != different.contentHash)
    }

    @Test(arguments: [
        ([UInt8](arrayLiteral: 0xFF, 0xFE, 0x7B), "UTF-8"),
        (Array("{\"jobId\": ".utf8), "JSON object"),
        (Array("[1,2]".utf8), "JSON object"),
        (Array(#"{"jobId":"j","merchantId":7}"#.utf8), "merchantId"),
        (Array(#"{"merchantId":"m1"}"#.utf8), "jobId"),
        (Array(#"{"merchantId":"m1","jobId":"has space"}"#.utf8), "jobId"),
    ])
    func unaddressedJobsCannotBeAttributed(body: [UInt8], mentions: String) {
        #expect {
            try PaymentJob.decode(body)
        } throws: { error in
            guard case .unaddressed(let reason) = error as? PaymentJob.DecodingError else { return false }
            return reason.contains(mentions)
        }
    }

    @Test(arguments: [
        (#"{"amount": {"value": "10", "currency": "GBP"}}"#, "amount.value"),
        (#"{"amount": {"value": 10.5, "currency": "GBP"}}"#, "amount.value"),
        (#"{"amount": {"value": true, "currency": "GBP"}}"#, "amount.value"),
        (#"{"amount": {"value": 0, "currency": "GBP"}}"#, "between"),
        (#"{"amount": {"value": 10, "currency": "XXX"}}"#, "ISO 4217"),
        (#"{"amount": null}"#, "amount"),
        (#"{"orderReference": null}"#, "orderReference"),
        (#"{"applePayToken": 5}"#, "applePayToken"),
        (#"{"notifyUrl": "ftp://x"}"#, "notifyUrl"),
        (#"{"metadata": {"n": 1}}"#, "metadata"),
        (#"{"orderReference": "e\#(String(repeating: "\u{301}", count: 64))"}"#, "orderReference"),   // 1 grapheme, 65 scalars
        (#"{"orderReference": "order\u00001"}"#, "orderReference"),
        (#"{"orderReference": "order\n1"}"#, "orderReference"),
        (#"{"notifyUrl": "http://"}"#, "notifyUrl"),
        (#"{"notifyUrl": "https:shop.example"}"#, "notifyUrl"),
        (#"{"metadata": {"cart": "4\u00002"}}"#, "metadata"),
        (#"{"metadata": {"ca\u0000rt": "42"}}"#, "metadata"),
    ])
    func invalidJobsOfAKnownSenderAreAttributed(overrides: String, mentions: String) {
        #expect {
            try PaymentJob.decode(Self.body(json: overrides))
        } throws: { error in
            guard case .invalid(let merchant, let job, _, let reason) = error as? PaymentJob.DecodingError else { return false }
            return merchant == "m1" && job == "job-1" && reason.contains(mentions)
        }
    }

    @Test func orderReferenceOf64ScalarsAndAHostedNotifyURLAreAccepted() throws {
        let job = try PaymentJob.decode(Self.body(["orderReference": String(repeating: "é", count: 64), "notifyUrl": "https://shop.example:8443/hook?x=1"]))
        #expect(job.orderReference.unicodeScalars.count == 64)
        #expect(job.notifyURL == "https://shop.example:8443/hook?x=1")
    }

    @Test func currencyTable() {
        #expect(Currency.alpha3("JPY")?.minorUnits == 0)
        #expect(Currency.alpha3("BHD")?.minorUnits == 3)
        #expect(Currency.numeric("826")?.code == "GBP")
        #expect(Currency.numeric("036")?.code == "AUD")
        #expect(Currency.numeric("36")?.code == "AUD")
        #expect(Currency.numeric("999") == nil)
    }
}
