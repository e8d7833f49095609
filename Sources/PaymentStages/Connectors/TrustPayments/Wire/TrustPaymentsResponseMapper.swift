import JSON
import PaymentDomain

/// Pure mapping of Trust Payments answers to ``GatewayOutcome``s: no I/O, so every code class is unit-tested. A module of
/// its own (`TrustPaymentsWire`, pure: PaymentDomain and JSON only) inside the connector's folder, so the fuzz harness,
/// which links no stage code (scripts/check-modules), fuzzes it.
///
/// The default for anything not listed is `uncertain`: treating an unknown answer as "declined" or "failed" could
/// abandon a payment the acquirer actually charged, while "uncertain" only costs a TRANSACTIONQUERY.
///
/// The codes and their meanings are those of Trust Payments' Python SDK 1.0.26, `securetrading/data/errormessages.json`
/// (copied to `Tests/Fixtures/trustpayments/errormessages.json`; `TrustPaymentsResponseMapperTests` checks every mapped code
/// against it). A code that list lacks stays uncertain.
public enum TrustPaymentsResponseMapper {
    /// errormessages.json: 60022 "Unauthenticated", 60042 "Insufficient funds", 70000 "Decline", 71000 "Soft
    /// Decline", 72000 "Refer to Issuer", 88888 "Soft Decline retry" (a new attempt by the customer, not a resend
    /// of this request).
    public static let declinedCodes: Set<Int> = [70000, 60022, 60042, 71000, 72000, 88888]
    /// Request-validation and rule errors, which no resend can fix (errormessages.json):
    /// - 10003 "Invalid card details", 10100 "Invalid date", 10101 "Invalid date/time", 10102 "Invalid details",
    ///   10103 "Card number does not match card type";
    /// - 10205 "Malformed JSON"; 10300/10301/10302 "JWT decoding error"/"JWT encoding error"/"JWT algorithm not
    ///   supported"; 10600 "Invalid fields specified in request";
    /// - 20004 "Missing parent" … 20040 "Cannot determine token": parent, refund and reversal rules (the list has
    ///   no 20016 or 20017, which stay uncertain);
    /// - 60018 "Invalid requesttype", 60025 "Invalid Request", 60040 "Can not specify both requesttypedescription
    ///   and requesttypedescriptions on a single request".
    /// The 30000 family ("Invalid field", "Unknown site", "Invalid version number", …) is permanent as a range.
    public static let permanentCodes: Set<Int> = Set([10003, 10100, 10101, 10102, 10103, 10205, 10300, 10301, 10302, 10600, 60018, 60025, 60040])
        .union(20004...20015).union(20018...20040)
    /// 79001 (record locked) and 88000 (generic retry) are uncertain too: no source says such a request was not
    /// processed (docs/submit.md), so they are queried before any resend.
    /// errormessages.json: 50000 "Socket receive error" … 50014 "Proxy error" (the list has no 50013), 60010 "Bank
    /// System Error", 70001 "Uncertain result", 79000 "Request is queued…", 79001 "Record is temporarily locked…",
    /// 88000 "Generic Retry", 99999 "Unknown error". Listed for documentation: every unlisted code is uncertain too.
    public static let uncertainCodes: Set<Int> = Set(50000...50012).union([50014, 60010, 70001, 79000, 79001, 88000, 99999])
    /// Answers that prove the request was not processed. None is documented as such today.
    public static let transientCodes: Set<Int> = []
    public static let reviewCodes: Set<Int> = [60034]

    /// The outcome of one `errorcode` (a decimal string; anything else is uncertain).
    public static func outcome(forErrorCode code: String) -> GatewayOutcome {
        guard let value = Int(code) else { return .uncertain }
        switch value {
        case 0: return .authorized
        case _ where declinedCodes.contains(value): return .declined
        case 30000...30999: return .permanentError
        case _ where permanentCodes.contains(value): return .permanentError
        case _ where transientCodes.contains(value): return .transient
        case _ where reviewCodes.contains(value): return .needsReview
        default: return .uncertain
        }
    }

    /// The item that decides the result: the one with a `customeroutput`, else the last one (as the JS library does).
    public static func mainItem(_ items: [JSONValue]) -> JSONValue? {
        items.first { $0["customeroutput"]?.stringValue != nil } ?? items.last
    }

    /// The result of a verified response JWT's claims (`{"payload":{"version":"1.00","response":[…]}}`).
    public static func result(fromClaims claims: JSONValue) -> GatewayResult {
        guard let items = responseItems(claims) else {
            return .local(.uncertain, code: "paypipe.invalid_response", message: "response has no version 1.00 response[]")
        }
        // `responseItems` guarantees a non-empty array.
        return result(fromItem: mainItem(items)!)
    }

    /// The result of one response (or TRANSACTIONQUERY record) item.
    public static func result(fromItem item: JSONValue) -> GatewayResult {
        let code = item["errorcode"]?.stringValue
        var result = GatewayResult(
            outcome: code.map(outcome(forErrorCode:)) ?? .uncertain, errorCode: code,
            errorMessage: item["errormessage"]?.stringValue,
            errorData: item["errordata"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            transactionReference: item["transactionreference"]?.stringValue, settleStatus: item["settlestatus"]?.stringValue,
            acquirerResponseCode: item["acquirerresponsecode"]?.stringValue, authCode: item["authcode"]?.stringValue,
            maskedPan: item["maskedpan"]?.stringValue)
        result.settleDueDate = SettlementSchedule.dueDate(item["settleduedate"]?.stringValue)
        if result.outcome == .authorized {
            applySettleStatus(&result)
        }
        if item["customeroutput"]?.stringValue == "THREEDREDIRECT" {
            // A challenge needs the cardholder, who is not here: the server-to-server AUTH cannot complete.
            result.outcome = .declined
            result.reason = "3ds_challenge_required"
        }
        return result
    }

    /// What an errorcode 0 AUTH means by its `settlestatus` (trustpayments.md §8): 0, 1, 10, 100 authorised;
    /// 3 cancelled (declined, `gateway_cancelled`); 2 suspended (`gateway_suspended`, for review: PayPipe sends no
    /// manual-capture AUTH yet); no `settlestatus` at all authorised; any other value uncertain.
    static func applySettleStatus(_ result: inout GatewayResult) {
        switch result.settleStatus {
        case nil, "0", "1", "10", "100": break
        case "3":
            result.outcome = .declined
            result.reason = "gateway_cancelled"
        case "2":
            result.outcome = .needsReview
            result.reason = "gateway_suspended"
        default:
            result.outcome = .uncertain
            result.reason = "gateway_settlestatus_unknown"
        }
    }

    /// Whether a record's `baseamount`, `currencyiso3a` and `orderreference`, where present, equal the payment's.
    static func matches(_ record: JSONValue, _ expected: TransactionQueryResult.Expected) -> Bool {
        if let orderReference = expected.orderReference, let recorded = record["orderreference"]?.stringValue, recorded != orderReference {
            return false
        }
        if let amountMinor = expected.amountMinor,
           let recorded = record["baseamount"].flatMap({ $0.int64Value ?? $0.stringValue.flatMap { Int64($0) } }), recorded != amountMinor {
            return false
        }
        if let currency = expected.currency, let recorded = record["currencyiso3a"]?.stringValue, recorded != currency { return false }
        return true
    }

    /// Interprets the verified claims of a TRANSACTIONQUERY answer for the payment described by `expected`.
    ///
    /// Only a successful query (errorcode 0) whose `records` list (in any order: no source gives one) holds no AUTH
    /// proves "no such transaction"; no `found` count is read (no source shows one). A response without a `records`
    /// list, a record without `requesttypedescription`, or an AUTH record without `errorcode` (no source says how
    /// such a record reads) proves nothing: inconclusive. A record whose own outcome is uncertain or transient
    /// proves nothing either way. The reference queried is the payment's own, so two AUTH records, or one whose
    /// amount, currency or order reference differs, mean something PayPipe does not understand: inconclusive, never
    /// adopted.
    public static func queryResult(fromClaims claims: JSONValue, expected: TransactionQueryResult.Expected = .init(amountMinor: nil, currency: nil)) -> TransactionQueryResult {
        guard let items = responseItems(claims), let item = mainItem(items) else {
            return .inconclusive(code: "paypipe.invalid_response", reason: "query response has no version 1.00 response[]")
        }
        guard item["errorcode"]?.stringValue == "0" else {
            return .inconclusive(code: item["errorcode"]?.stringValue ?? "paypipe.invalid_response",
                                 reason: "query failed: \(item["errormessage"]?.stringValue ?? "no message")")
        }
        guard let records = item["records"]?.arrayValue else {
            return .inconclusive(code: "paypipe.query_unrecognised", reason: "query answer has no records list")
        }
        guard records.allSatisfy({ $0["requesttypedescription"]?.stringValue != nil }) else {
            return .inconclusive(code: "paypipe.query_unrecognised", reason: "a record has no requesttypedescription")
        }
        let auths = records.filter { $0["requesttypedescription"]?.stringValue == "AUTH" }
        guard let record = auths.first else { return .notFound }
        guard auths.count == 1 else {
            return .inconclusive(code: "paypipe.query_ambiguous", reason: "\(auths.count) AUTH records for one payment's reference")
        }
        guard matches(record, expected) else {
            return .inconclusive(code: "paypipe.query_mismatch", reason: "the AUTH record's amount or currency differs from the payment's")
        }
        guard record["errorcode"]?.stringValue != nil else {
            return .inconclusive(code: "paypipe.query_record_without_errorcode", reason: "the AUTH record carries no errorcode")
        }
        let adopted = result(fromItem: record)
        switch adopted.outcome {
        case .uncertain, .transient:
            return .inconclusive(code: adopted.errorCode ?? "paypipe.query_uncertain", reason: "the recorded AUTH has no final outcome yet")
        case .authorized, .declined, .permanentError, .needsReview:
            return .found(adopted)
        }
    }

    /// `payload.response` when `payload.version` is `1.00` and the array is non-empty.
    static func responseItems(_ claims: JSONValue) -> [JSONValue]? {
        guard let payload = claims["payload"], payload["version"]?.stringValue == "1.00",
              let items = payload["response"]?.arrayValue, !items.isEmpty else { return nil }
        return items
    }
}
