import Foundation
import JWT
import Pipeline
@testable import PaymentStages
@testable import PayPipeDevTools
import Synchronization
import Testing
import TrustPaymentsWire

/// The simulator's pure parts: amount behaviours, field validation, the ledger and TRANSACTIONQUERY.
@Suite struct GatewaySimulatorEngineTests {
    /// The TapPay face's primes: `sim_<ms>_…` lives 90 s, a deferred payment's `sim_deferred_<ms>_…` 30 days.
    @Test func tapPayPrimeLifetimes() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let ms = { (age: TimeInterval) in Int64((now.timeIntervalSince1970 - age) * 1000) }
        #expect(!TapPaySimulatorFace.expired("sim_\(ms(60))_ab", now: now))
        #expect(TapPaySimulatorFace.expired("sim_\(ms(120))_ab", now: now))
        #expect(!TapPaySimulatorFace.expired("sim_deferred_\(ms(86_400))_ab", now: now))
        #expect(TapPaySimulatorFace.expired("sim_deferred_\(ms(31 * 86_400))_ab", now: now))
        #expect(!TapPaySimulatorFace.expired(TapPaySimulatorFace.sandboxPrimes.first!, now: now))
        #expect(!TapPaySimulatorFace.expired(SampleJobFactory.sampleDeferredPrime(now: now.addingTimeInterval(-29 * 86_400)), now: now))
    }

    static func fields(amount: Int64, order: String = "ORDER-1", pan: String? = "4111111111111111") -> JSONValue {
        var fields: JSONValue = [
            "sitereference": "test_site1", "accounttypedescription": "ECOM", "currencyiso3a": "GBP",
            "baseamount": .string(String(amount)), "orderreference": .string(order), "expirydate": "07/2030",
        ]
        if let pan { fields.set(.string(pan), forKey: "pan") }
        return fields
    }

    func engine() -> SimulatorEngine { SimulatorEngine(ledger: SimulatorLedger(), slowResponseSeconds: 7) }

    @Test func behavioursByAmount() {
        #expect(SimulatorBehaviour.forAmount(1000) == .authorize)
        #expect(SimulatorBehaviour.forAmount(1051) == .decline)
        #expect(SimulatorBehaviour.forAmount(1099) == .unknownError)
        #expect(SimulatorBehaviour.forAmount(1098) == .slowAfterRecording)
        #expect(SimulatorBehaviour.forAmount(1097) == .serverError)
        #expect(SimulatorBehaviour.forAmount(1096) == .connectionReset)
        #expect(SimulatorBehaviour.forAmount(1095) == .challenge)
        #expect(SimulatorBehaviour.forAmount(1094) == .manualReview)
        #expect(SimulatorBehaviour.forAmount(1093) == .locked)
        #expect(SimulatorBehaviour.forAmount(1092) == .forgedSignature)
        #expect(SimulatorBehaviour.forAmount(1091) == .invalidField)
    }

    @Test func validatorNamesTheFirstBadField() {
        #expect(SimulatorRequestValidator.invalidAuthField(Self.fields(amount: 100)) == nil)
        var fields = Self.fields(amount: 100)
        fields.set("gbp", forKey: "currencyiso3a")
        #expect(SimulatorRequestValidator.invalidAuthField(fields) == "currencyiso3a")
        #expect(SimulatorRequestValidator.invalidAuthField(Self.fields(amount: 0)) == "baseamount")
        #expect(SimulatorRequestValidator.invalidAuthField(Self.fields(amount: 100, pan: "41x1")) == "pan")
        #expect(SimulatorRequestValidator.invalidAuthField(Self.fields(amount: 100, pan: nil)) == "pan")
        fields = Self.fields(amount: 100)
        fields.set("2030-07", forKey: "expirydate")
        #expect(SimulatorRequestValidator.invalidAuthField(fields) == "expirydate")
        #expect(SimulatorRequestValidator.maskedPan("4111111111111111") == "411111######1111")
    }

    @Test func invalidFieldAnswers30000WithErrordata() {
        let reply = engine().handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 0))
        #expect(reply.items.first?["errorcode"]?.stringValue == "30000")
        #expect(reply.items.first?["errordata"] == ["baseamount"])
    }

    @Test func authorisesRecordsAndQueries() {
        let engine = engine()
        let reply = engine.handle(requestTypes: ["THREEDQUERY", "AUTH"], fields: Self.fields(amount: 1000))
        #expect(reply.delivery == .answer)
        #expect(reply.items.map { $0["requesttypedescription"]?.stringValue } == ["THREEDQUERY", "AUTH"])
        let auth = TrustPaymentsResponseMapper.result(fromItem: TrustPaymentsResponseMapper.mainItem(reply.items)!)
        #expect(auth.outcome == .authorized)
        #expect(auth.maskedPan == "411111######1111")
        #expect(engine.ledger.authCount(orderReference: "ORDER-1") == 1)

        let filter: JSONValue = ["filter": ["sitereference": [["value": "test_site1"]], "orderreference": [["value": "ORDER-1"]]]]
        let query = engine.handle(requestTypes: ["TRANSACTIONQUERY"], fields: filter)
        let claims: JSONValue = ["payload": ["version": "1.00", "response": .array(query.items)]]
        guard case .found(let found) = TrustPaymentsResponseMapper.queryResult(fromClaims: claims) else {
            Issue.record("expected the AUTH to be found")
            return
        }
        #expect(found.transactionReference == auth.transactionReference)
        let other: JSONValue = ["filter": ["sitereference": [["value": "test_site1"]], "orderreference": [["value": "ORDER-2"]]]]
        let none: JSONValue = ["payload": ["version": "1.00", "response": .array(engine.handle(requestTypes: ["TRANSACTIONQUERY"], fields: other).items)]]
        #expect(TrustPaymentsResponseMapper.queryResult(fromClaims: none) == .notFound)
        #expect(engine.handle(requestTypes: ["TRANSACTIONQUERY"], fields: [:]).items.first?["errorcode"]?.stringValue == "60019")
    }

    @Test func faultBehavioursRecordOrNotAsDocumented() {
        let engine = engine()
        #expect(engine.handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 1097, order: "A")).delivery == .serverError)
        #expect(engine.handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 1098, order: "B")).delivery == .slow(7))
        #expect(engine.handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 1096, order: "C")).delivery == .connectionReset)
        let uncertain = engine.handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 1099, order: "D"))
        #expect(uncertain.items.last?["errorcode"]?.stringValue == "99999")
        #expect(engine.handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 1093, order: "E")).items.last?["errorcode"]?.stringValue == "79001")
        let challenge = engine.handle(requestTypes: ["THREEDQUERY", "AUTH"], fields: Self.fields(amount: 1095, order: "F"))
        #expect(TrustPaymentsResponseMapper.result(fromItem: TrustPaymentsResponseMapper.mainItem(challenge.items)!).reason == "3ds_challenge_required")
        #expect(engine.handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 1051, order: "G")).items.last?["errorcode"]?.stringValue == "70000")
        #expect(["A", "B", "C", "D", "E", "F", "G"].map(engine.ledger.authCount(orderReference:)) == [0, 1, 1, 1, 0, 0, 1])
        #expect(engine.ledger.totalAuths == 4)
        #expect(engine.handle(requestTypes: ["REFUNDX"], fields: [:]).items.first?["errorcode"]?.stringValue == "60018")
    }

    @Test func faultRateOneRefusesEverything() {
        let engine = SimulatorEngine(ledger: SimulatorLedger(), slowResponseSeconds: 0, faultRate: 1)
        #expect(engine.handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 100)).delivery == .unavailable)
        #expect(engine.ledger.totalAuths == 0)
    }

    @Test func injectedLostAnswersRecordTheAuthFirst() {
        let ledger = SimulatorLedger()
        let slow = SimulatorEngine(ledger: ledger, slowResponseSeconds: 7, timeoutRate: 1)
        #expect(slow.handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 1000, order: "T")).delivery == .slow(7))
        let reset = SimulatorEngine(ledger: ledger, slowResponseSeconds: 7, resetRate: 1)
        #expect(reset.handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 1000, order: "R")).delivery == .connectionReset)
        // Declines are recorded too, so they lose their answer as well; refusals record nothing and are untouched.
        #expect(reset.handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 1051, order: "D")).delivery == .connectionReset)
        #expect(reset.handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 1093, order: "L")).delivery == .answer)
        #expect(ledger.authCounts() == ["T": 1, "R": 1, "D": 1])
        let none = SimulatorEngine(ledger: SimulatorLedger(), slowResponseSeconds: 7)
        #expect(none.handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 1000)).delivery == .answer)
    }

    @Test func merchantPairsParse() throws {
        #expect(try GatewaySimulatorConfiguration.pairs("a=b, c=d=e", variable: "X") == ["a": "b", "c": "d=e"])
        #expect(throws: ConfigurationError.self) { try GatewaySimulatorConfiguration.pairs("a", variable: "X") }
        #expect(Self.refusal(GatewaySimulator.merged(payload: ["requesttypedescriptions": ["AUTH"]], requestObject: ["requesttypedescriptions": ["RISKDEC"]]).types) == "60018")
        #expect(GatewaySimulator.merged(payload: ["a": "1"], requestObject: ["requesttypedescriptions": ["AUTH"], "b": "2"]).fields == ["a": "1", "b": "2"])
    }

    static func refusal(_ types: Result<[String], SimulatorReplyError>) -> String? {
        guard case .failure(let error) = types else { return nil }
        return error.item["errorcode"]?.stringValue
    }

    /// 60040 is both forms on one request (errormessages.json), the singular form alone is accepted (the SDK's tests).
    @Test func requestTypeForms() throws {
        #expect(Self.refusal(GatewaySimulator.merged(payload: [:], requestObject: ["requesttypedescriptions": ["AUTH"], "requesttypedescription": "AUTH"]).types) == "60040")
        #expect(try GatewaySimulator.merged(payload: [:], requestObject: ["requesttypedescription": "REFUND"]).types.get() == ["REFUND"])
        #expect(try GatewaySimulator.merged(payload: [:], requestObject: ["requesttypedescriptions": ["THREEDQUERY", "AUTH"]]).types.get() == ["THREEDQUERY", "AUTH"])
        #expect(Self.refusal(GatewaySimulator.merged(payload: [:], requestObject: ["requesttypedescription": 7]).types) == "60018")
    }

    /// Any one valid filter, several values per filter; 60037 for an unknown or malformed one, 60019 for none; records
    /// per site reference.
    @Test func queryFilters() throws {
        let engine = SimulatorEngine(ledger: SimulatorLedger(), slowResponseSeconds: 7)
        var first = Self.fields(amount: 1000, order: "Q1")
        first.set("test_a", forKey: "sitereference")
        var second = Self.fields(amount: 1000, order: "Q2")
        second.set("test_b", forKey: "sitereference")
        let reference = try #require(engine.handle(requestTypes: ["AUTH"], fields: first).items.last?["transactionreference"]?.stringValue)
        _ = engine.handle(requestTypes: ["AUTH"], fields: second)
        func query(_ filter: JSONValue?) -> JSONValue? {
            var fields: JSONValue = [:]
            if let filter { fields.set(filter, forKey: "filter") }
            return engine.handle(requestTypes: ["TRANSACTIONQUERY"], fields: fields).items.first
        }
        #expect(query(["transactionreference": [["value": .string(reference)]]])?["records"]?.arrayValue?.count == 1)
        #expect(query(["orderreference": [["value": "Q1"], ["value": "Q2"]]])?["records"]?.arrayValue?.count == 2)
        #expect(query(["sitereference": [["value": "test_b"]], "orderreference": [["value": "Q1"]]])?["records"]?.arrayValue?.count == 0)
        #expect(query(["sitereference": [["value": "test_a"]], "orderreference": [["value": "Q1"]]])?["records"]?[0]?["orderreference"] == "Q1")
        #expect(query(["colour": [["value": "red"]]])?["errorcode"] == "60037")
        #expect(query(["orderreference": ["Q1"]])?["errorcode"] == "60037")
        #expect(query([:])?["errorcode"] == "60019")
        #expect(query(nil)?["errorcode"] == "60019")
        #expect(query(["orderreference": [["value": "Q1"]]])?["found"] == nil, "no source shows a found member")
    }

    /// TRANSACTIONUPDATE while pending, REFUND only of a settled parent, within its amount.
    @Test func updateAndRefund() throws {
        let now = Mutex(1_000.0)
        let engine = SimulatorEngine(ledger: SimulatorLedger(), slowResponseSeconds: 7, settleDelaySeconds: 60, clock: { now.withLock { $0 } })
        let auth = try #require(engine.handle(requestTypes: ["AUTH"], fields: Self.fields(amount: 1000, order: "U1")).items.last)
        let reference = try #require(auth["transactionreference"]?.stringValue)
        func refund(_ amount: String?) -> JSONValue? {
            var fields: JSONValue = ["parenttransactionreference": .string(reference), "sitereference": "test_site1"]
            if let amount { fields.set(.string(amount), forKey: "baseamount") }
            return engine.handle(requestTypes: ["REFUND"], fields: fields).items.first
        }
        func update(_ updates: JSONValue) -> JSONValue? {
            engine.handle(requestTypes: ["TRANSACTIONUPDATE"], fields: ["filter": ["transactionreference": [["value": .string(reference)]]], "updates": updates]).items.first
        }
        #expect(refund(nil)?["errorcode"] == "20012", "not settled yet")
        #expect(update(["settlebaseamount": "960"])?["errorcode"] == "0")
        #expect(update(["settlebaseamount": "2000"])?["errorcode"] == "60016")
        #expect(update(["colour": "red"])?["errorcode"] == "60033")
        now.withLock { $0 += 61 }
        #expect(update(["settlestatus": "2"])?["errorcode"] == "60017", "settled: no longer updatable")
        #expect(refund("500")?["errorcode"] == "0")
        #expect(refund("500")?["errorcode"] == "20007", "960 settled, 500 refunded")
        #expect(refund("460")?["errorcode"] == "0")
        let records = engine.handle(requestTypes: ["TRANSACTIONQUERY"], fields: ["filter": ["orderreference": [["value": "U1"]]]]).items.first?["records"]?.arrayValue ?? []
        #expect(records.compactMap { $0["requesttypedescription"]?.stringValue }.sorted() == ["AUTH", "REFUND", "REFUND"])
        #expect(records.allSatisfy { record in !(record.objectValue ?? []).contains { $0.key.hasPrefix("_") } })
        #expect(engine.ledger.totalAuths == 1)
    }

    /// Manual capture at the simulated gateway: an AUTH asking settle status 2 stays suspended (never settles by
    /// itself), a capture releases it and it settles the delay after the release, not after the AUTH; a REFUND before
    /// that is refused (20012); every operation that took effect is on the operation ledger under its request reference.
    @Test func suspendedAuthCaptureSettlementAndTheOperationLedger() throws {
        let now = Mutex(1_000.0)
        let engine = SimulatorEngine(ledger: SimulatorLedger(), slowResponseSeconds: 7, settleDelaySeconds: 60, clock: { now.withLock { $0 } })
        var fields = Self.fields(amount: 1000, order: "M1")
        fields.set("2", forKey: "settlestatus")
        let auth = try #require(engine.handle(requestTypes: ["AUTH"], fields: fields).items.last)
        #expect(auth["settlestatus"] == "2")
        let reference = try #require(auth["transactionreference"]?.stringValue)
        let filter: JSONValue = ["transactionreference": [["value": .string(reference)]]]
        func settleStatus() -> String? {
            engine.handle(requestTypes: ["TRANSACTIONQUERY"], fields: ["filter": filter]).items.first?["records"]?[0]?["settlestatus"]?.stringValue
        }
        func refund(_ amount: String, _ requestReference: String) -> String? {
            engine.handle(requestTypes: ["REFUND"], fields: ["parenttransactionreference": .string(reference), "baseamount": .string(amount)],
                          requestReference: requestReference).items.first?["errorcode"]?.stringValue
        }
        now.withLock { $0 += 120 }
        #expect(settleStatus() == "2", "a suspended AUTH does not settle")
        #expect(refund("100", "O1-a") == "20012", "a REFUND of an unsettled parent is refused")
        let capture = engine.handle(requestTypes: ["TRANSACTIONUPDATE"], fields: ["filter": filter, "updates": ["settlestatus": "0", "settlebaseamount": "800"]],
                                    requestReference: "O2-b")
        #expect(capture.items.first?["errorcode"] == "0")
        #expect(settleStatus() == "0", "released, not yet settled")
        now.withLock { $0 += 61 }
        #expect(settleStatus() == "100")
        #expect(refund("300", "O3-c") == "0")
        #expect(refund("501", "O4-d") == "20007", "800 settled, 300 refunded")
        let ledger = engine.ledger.operations
        #expect(ledger.compactMap { $0["requestreference"]?.stringValue } == ["O2-b", "O3-c"])
        #expect(ledger.allSatisfy { $0["transactionreference"]?.stringValue == reference })
        #expect(ledger.last?["baseamount"] == "300")
    }

    /// The injected faults apply to TRANSACTIONUPDATE and REFUND too: dropped before processing (nothing changes, not on
    /// the ledger), or processed and answered too late or not at all (on the ledger: the answer is what is lost).
    @Test func operationsGetTheLostSlowAndUncertainFaults() throws {
        func engine(lose: Double = 0, timeout: Double = 0, reset: Double = 0) -> SimulatorEngine {
            SimulatorEngine(ledger: SimulatorLedger(), slowResponseSeconds: 7, timeoutRate: timeout, resetRate: reset, loseRate: lose)
        }
        func run(_ engine: SimulatorEngine) throws -> (SimulatorReply, String?) {
            var fields = Self.fields(amount: 1000, order: "F1")
            fields.set("2", forKey: "settlestatus")
            // The AUTH's own faults are drawn too; the first draw decides it, so give the AUTH a clean engine's ledger.
            let clean = SimulatorEngine(ledger: engine.ledger, slowResponseSeconds: 7)
            let reference = try #require(clean.handle(requestTypes: ["AUTH"], fields: fields).items.last?["transactionreference"])
            let reply = engine.handle(requestTypes: ["TRANSACTIONUPDATE"], fields: [
                "filter": ["transactionreference": [["value": reference]]], "updates": ["settlestatus": "3"],
            ], requestReference: "O9-x")
            let status = clean.handle(requestTypes: ["TRANSACTIONQUERY"], fields: ["filter": ["transactionreference": [["value": reference]]]])
                .items.first?["records"]?[0]?["settlestatus"]?.stringValue
            return (reply, status)
        }
        let lost = engine(lose: 1)
        let (lostReply, lostStatus) = try run(lost)
        #expect(lostReply.delivery == .connectionReset && lostReply.items.isEmpty)
        #expect(lostStatus == "2" && lost.ledger.operations.isEmpty)
        for (faulty, delivery) in [(engine(timeout: 1), SimulatorReply.Delivery.slow(7)), (engine(reset: 1), .connectionReset)] {
            let (reply, status) = try run(faulty)
            #expect(reply.delivery == delivery)
            #expect(status == "3" && faulty.ledger.operations.count == 1)
        }
    }

    /// `expirymonth` + `expiryyear` (the SDK's tests) are accepted besides `expirydate`.
    @Test func expiryMonthAndYear() {
        var fields: JSONValue = [
            "sitereference": "test_site1", "accounttypedescription": "ECOM", "currencyiso3a": "GBP", "baseamount": "100",
            "pan": "4111111111111111", "securitycode": "123", "paymenttypedescription": "VISA",
        ]
        fields.set("11", forKey: "expirymonth")
        fields.set("2031", forKey: "expiryyear")
        #expect(SimulatorRequestValidator.invalidAuthField(fields) == nil)
        fields.set("13", forKey: "expirymonth")
        #expect(SimulatorRequestValidator.invalidAuthField(fields) == "expirymonth")
    }
}
