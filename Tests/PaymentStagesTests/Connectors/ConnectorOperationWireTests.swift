import Foundation
import HTTP
import JWT
@testable import PaymentStages
import Pipeline
import Testing

/// The wire half of OPP's and TapPay's operations: the requests, the status queries that reconcile a lost answer, and
/// their answers read as ``OperationProtocol/Evidence`` and ``OperationSteps/Answer``. Pure, table-driven.
@Suite struct ConnectorOperationWireTests {
    // MARK: OPP

    /// Each back-office request carries the operation's own merchantTransactionId, after the form OPP documents.
    @Test func oppOperationsCarryTheirOwnReference() throws {
        let reference = OPPWire.operationReference(paymentReference: "6f9619ff-8b86-d011-b42d-00c04fc964ff", operationRowId: 42)
        #expect(reference == "6f9619ff-8b86-d011-b42d-00c04fc964ff-op42" && reference.count >= 8)
        let capture = try OPPWire.operationForm(.capture(transactionId: "8ac7", amountMinor: 600, currency: "GBP"), entityId: "e1", reference: reference)
        #expect(capture.path == "/v1/payments/8ac7")
        #expect(capture.form.map { "\($0.key)=\($0.value)" } == ["entityId=e1", "amount=6.00", "currency=GBP", "paymentType=CP", "merchantTransactionId=\(reference)"])
        let void = try OPPWire.operationForm(.void(transactionId: "8ac7"), entityId: "e1", reference: reference)
        #expect(void.form.map { "\($0.key)=\($0.value)" } == ["entityId=e1", "paymentType=RV", "merchantTransactionId=\(reference)"])
        #expect(try OPPWire.operationForm(.void(transactionId: "8ac7"), entityId: "e1").form.count == 2)
        #expect(OPPWire.queryPath(entityId: "e1", reference: reference) == "/v3/query?entityId=e1&merchantTransactionId=\(reference)")
    }

    static func record(_ type: String, _ amount: String, _ code: String, reference: String = "R-op1", parent: String? = "P1") -> JSONValue {
        var record: JSONValue = ["id": "x", "paymentType": .string(type), "amount": .string(amount), "currency": "GBP",
                                 "merchantTransactionId": .string(reference), "result": ["code": .string(code)]]
        if let parent { record.set(.string(parent), forKey: "referencedId") }
        return record
    }

    static func query(_ records: [JSONValue], code: String = "000.000.100") -> JSONValue {
        ["result": ["code": .string(code)], "payments": .array(records)]
    }

    /// A query answer read as the operation's transactions: kind, amount in minor units and result group; other
    /// payments' children skipped; a failed query or a record of another reference is a failure, never evidence.
    @Test(arguments: [
        (query([record("CP", "6.00", "000.000.000")]), "capture 600 succeeded"),
        (query([record("RF", "3.00", "000.100.110")]), "refund 300 succeeded"),
        (query([record("RV", "", "000.200.000")]), "void - pending"),
        (query([record("RF", "3.00", "800.100.151")]), "refund 300 rejected"),
        (query([record("CP", "6.00", "000.000.000", parent: "OTHER")]), ""),
        (query([]), ""),
        (query([record("CP", "6.00", "000.000.000", reference: "R-op2")]), "failure paypipe.query_unrecognised"),
        (query([], code: "200.300.404"), "failure 200.300.404"),
    ])
    func oppQueryAnswers(answer: JSONValue, expected: String) {
        let shown: String = switch OPPWire.operationEvidence(answer, reference: "R-op1", transactionId: "P1", currency: "GBP", sandbox: true) {
        case .failure(let failure): "failure \(failure.code)"
        case .success(.transactions(let records)):
            records.map { "\($0.kind?.rawValue ?? "other") \($0.amount.map(String.init) ?? "-") \($0.result.rawValue)" }.joined(separator: "; ")
        case .success(let other): "\(other)"
        }
        #expect(shown == expected)
    }

    // MARK: Trust Payments

    static func transactionQuery(_ records: [JSONValue], code: String = "0") -> JSONValue {
        ["response": [["errorcode": .string(code), "records": .array(records)]]]
    }

    /// A TRANSACTIONQUERY answer as the neutral evidence a lost TRANSACTIONUPDATE answer is reconciled on: the AUTH's
    /// settle status and settlebaseamount as the payment's settlement; no AUTH record of the reference (or one without a
    /// settle status) shows no payment; an answer not Ok is a failure.
    @Test(arguments: [
        (transactionQuery([["requesttypedescription": "AUTH", "transactionreference": "1-2-3", "settlestatus": "0", "settlebaseamount": "800"]]),
         "settlement 0 800"),
        (transactionQuery([["requesttypedescription": "AUTH", "transactionreference": "1-2-3", "settlestatus": "3"]]), "settlement 3 -"),
        (transactionQuery([["requesttypedescription": "REFUND", "transactionreference": "1-2-3", "settlestatus": "0"]]), "no record"),
        (transactionQuery([["requesttypedescription": "AUTH", "transactionreference": "1-2-4", "settlestatus": "0"]]), "no record"),
        (transactionQuery([["requesttypedescription": "AUTH", "transactionreference": "1-2-3"]]), "no record"),
        (transactionQuery([]), "no record"),
        (transactionQuery([], code: "50000"), "failure paypipe.query_failed"),
    ])
    func trustPaymentsQueryAnswers(answer: JSONValue, expected: String) {
        let evidence = TrustPaymentsClient.settlements(answer, of: ["1-2-3"]).map { OperationProtocol.Evidence.settlement($0["1-2-3"]) }
        let shown: String = switch evidence {
        case .failure(let failure): "failure \(failure.code)"
        case .success(.payment(nil)): "no record"
        case .success(.payment(let shown?)) where shown.isCaptured == nil && shown.refundedAmount == nil:
            "settlement \(shown.settlement.map { $0.settleStatus.trustPaymentsValue } ?? "-") \(shown.settlement?.settleBaseAmount.map(String.init) ?? "-")"
        case .success(let other): "\(other)"
        }
        #expect(shown == expected)
    }

    // MARK: TapPay

    /// A refund always carries its amount, in TapPay's unit; one TapPay cannot express is refused, never sent without
    /// an amount (which would refund everything left).
    @Test func tapPayRefundsAlwaysCarryTheirAmount() throws {
        #expect(try TapPayWire.operationBody(.refund(transactionId: "D1", amountMinor: 250, currency: "USD"), partnerKey: "k")?.body["amount"] == .integer(250))
        #expect(throws: ConnectorBuildError.self) { try TapPayWire.operationBody(.refund(transactionId: "D1", amountMinor: 150, currency: "TWD"), partnerKey: "k") }
        let capture = try TapPayWire.operationBody(.capture(transactionId: "D1", amountMinor: 1000, currency: "TWD"), partnerKey: "k")
        #expect(capture?.body == ["partner_key": "k", "rec_trade_id": "D1"])
    }

    /// The Record API query by rec_trade_id (a documented filter), a 90-day time window in case time is mandatory.
    @Test func tapPayTradeQuery() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let query = TapPayWire.tradeQuery(partnerKey: "k", recTradeId: "D1", around: now)
        #expect(query["filters"]?["rec_trade_id"] == "D1" && query["filters"]?["bank_transaction_id"] == nil)
        let start: Int64? = query["filters"]?["time"]?["start_time"]?.int64Value
        #expect(start == Int64(1_792_224_000_000))
        #expect(query["partner_key"] == "k" && query["records_per_page"] == 200)
    }

    static func trades(_ records: [JSONValue], status: Int64 = 0) -> JSONValue {
        ["status": .integer(status), "trade_records": .array(records)]
    }

    @Test(arguments: [
        (trades([["rec_trade_id": "D1", "is_captured": true, "refund_amount": 5, "currency": "TWD"]]), "captured true refunded 500"),
        (trades([["rec_trade_id": "D1", "is_captured": false, "refund_amount": 0]]), "captured false refunded 0"),
        (trades([["rec_trade_id": "D1"]]), "captured - refunded -"),
        (trades([], status: 2), "no record"),
        (trades([["rec_trade_id": "D2", "is_captured": true]]), "failure paypipe.query_unrecognised"),
        (trades([["rec_trade_id": "D1"], ["rec_trade_id": "D1"]]), "failure paypipe.query_unrecognised"),
        (["status": 5, "msg": "Wrong JSON format"] as JSONValue, "failure 5"),
    ])
    func tapPayRecordAnswers(answer: JSONValue, expected: String) {
        let shown: String = switch TapPayWire.tradeEvidence(answer, recTradeId: "D1", currency: "TWD") {
        case .failure(let failure): "failure \(failure.code)"
        case .success(.payment(nil)): "no record"
        case .success(.payment(let record?)) where record.settlement == nil:
            "captured \(record.isCaptured.map(String.init) ?? "-") refunded \(record.refundedAmount.map(String.init) ?? "-")"
        case .success(let other): "\(other)"
        }
        #expect(shown == expected)
    }

    // MARK: Answers

    /// A connector's result as an operation's answer: success confirmed (with the new transaction's id), a decline
    /// or validation error refused with the gateway's code, a local refusal with its own, transient not sent,
    /// anything else uncertain.
    @Test(arguments: [
        (GatewayResult(outcome: .authorized, errorCode: "000.000.000", errorMessage: "ok", transactionReference: "RF1"), "confirmed RF1"),
        (GatewayResult(outcome: .declined, errorCode: "800.100.151", errorMessage: "declined"), "refused gateway_800.100.151"),
        (GatewayResult(outcome: .permanentError, errorCode: "510", errorMessage: "invalid amount"), "refused gateway_510"),
        ({ var r = GatewayResult.local(.permanentError, code: "paypipe.amount_not_representable", message: "TWD"); r.reason = "amount_not_representable"; return r }(),
         "refused amount_not_representable"),
        (GatewayResult.unsupported(.void(transactionId: "D1"), connector: .tapPay), "refused operation_not_supported"),
        (GatewayResult.local(.permanentError, code: "paypipe.insecure_gateway_url", message: "http"), "refused gateway_not_configured"),
        (GatewayResult.local(.transient, code: "paypipe.send_window", message: "late"), "not_sent paypipe.send_window"),
        (GatewayResult.local(.uncertain, code: "paypipe.transport", message: "reset"), "uncertain paypipe.transport"),
        (GatewayResult(outcome: .uncertain, errorCode: "421", errorMessage: "Gateway Timeout"), "uncertain 421"),
        (GatewayResult(outcome: .needsReview, errorCode: "000.400.020", errorMessage: "review"), "uncertain 000.400.020"),
    ])
    func connectorAnswers(result: GatewayResult, expected: String) {
        let shown = switch OperationSteps.Answer(connectorResult: result) {
        case .confirmed(let reference): "confirmed \(reference ?? "-")"
        case .refused(let code, _): "refused \(code)"
        case .notSent(let code, _): "not_sent \(code)"
        case .uncertain(let code, _): "uncertain \(code)"
        }
        #expect(shown == expected)
    }

    /// The decided request in each connector's form, in the payment's currency; a TRANSACTIONUPDATE is none.
    @Test func decidedRequestsInConnectorForm() {
        #expect(ConnectorOperation(.capture(transactionReference: "P", amount: 5), currency: "GBP") == .capture(transactionId: "P", amountMinor: 5, currency: "GBP"))
        #expect(ConnectorOperation(.void(transactionReference: "P"), currency: "GBP") == .void(transactionId: "P"))
        #expect(ConnectorOperation(.refund(parentTransactionReference: "P", amount: 5), currency: "USD") == .refund(transactionId: "P", amountMinor: 5, currency: "USD"))
        // What a processor's own capture, void and refund cannot express: a capture without its amount, a lowered
        // capture, a suspension.
        #expect(ConnectorOperation(.capture(transactionReference: "P", amount: nil), currency: "GBP") == nil)
        #expect(ConnectorOperation(.lowerCapture(transactionReference: "P", amount: 5), currency: "GBP") == nil)
        #expect(ConnectorOperation(.hold(transactionReference: "P"), currency: "GBP") == nil)
    }
}
