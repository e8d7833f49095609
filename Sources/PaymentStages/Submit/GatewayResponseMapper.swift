import JWT

/// Pure mapping of Trust Payments answers to ``GatewayOutcome``s: no I/O, so every code class is unit-tested.
///
/// The default for anything not listed is `uncertain`: treating an unknown answer as "declined" or "failed" could
/// abandon a payment the acquirer actually charged, while "uncertain" only costs a TRANSACTIONQUERY.
public enum GatewayResponseMapper {
    public static let declinedCodes: Set<Int> = [70000, 60022, 60042, 71000, 72000]
    public static let permanentCodes: Set<Int> = [10300, 10301, 10302, 60018, 60025, 60040]
    /// 79001 (record locked) and 88000 (generic retry) are uncertain too: no source says such a request was not
    /// processed (docs/submit.md), so they are queried before any resend.
    public static let uncertainCodes: Set<Int> = Set(50000...50014).union([60010, 70001, 79000, 79001, 88000, 99999])
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
    /// manual-capture AUTH yet); no `settlestatus` at all authorised, as before; any other value uncertain.
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

    /// What a payment's own AUTH record must match to be adopted: its amount in minor units and its currency.
    public struct Expected: Sendable, Equatable {
        public let amountMinor: Int64?
        public let currency: String?

        public init(amountMinor: Int64?, currency: String?) {
            self.amountMinor = amountMinor
            self.currency = currency
        }

        /// Whether a record's `baseamount` and `currencyiso3a`, where present, equal the payment's.
        func matches(_ record: JSONValue) -> Bool {
            if let amountMinor, let recorded = record["baseamount"].flatMap({ $0.int64Value ?? $0.stringValue.flatMap { Int64($0) } }),
               recorded != amountMinor { return false }
            if let currency, let recorded = record["currencyiso3a"]?.stringValue, recorded != currency { return false }
            return true
        }
    }

    /// Interprets the verified claims of a TRANSACTIONQUERY answer for the payment described by `expected`.
    ///
    /// Only a successful query (errorcode 0) that lists no AUTH record proves "no such transaction"; a record whose
    /// own outcome is uncertain or transient proves nothing either way. The reference queried is the payment's own,
    /// so two AUTH records, or one whose amount or currency differs, mean something PayPipe does not understand:
    /// inconclusive, never adopted.
    public static func queryResult(fromClaims claims: JSONValue, expected: Expected = Expected(amountMinor: nil, currency: nil)) -> TransactionQueryResult {
        guard let items = responseItems(claims), let item = mainItem(items) else {
            return .inconclusive(code: "paypipe.invalid_response", reason: "query response has no version 1.00 response[]")
        }
        guard item["errorcode"]?.stringValue == "0" else {
            return .inconclusive(code: item["errorcode"]?.stringValue ?? "paypipe.invalid_response",
                                 reason: "query failed: \(item["errormessage"]?.stringValue ?? "no message")")
        }
        let records = item["records"]?.arrayValue ?? []
        let auths = records.filter { ($0["requesttypedescription"]?.stringValue ?? "AUTH") == "AUTH" }
        guard let record = auths.first else {
            let found = item["found"]?.stringValue.flatMap { Int($0) } ?? records.count
            return found == 0 ? .notFound : .inconclusive(code: "paypipe.query_unrecognised", reason: "query found records but no AUTH")
        }
        guard auths.count == 1 else {
            return .inconclusive(code: "paypipe.query_ambiguous", reason: "\(auths.count) AUTH records for one payment's reference")
        }
        guard expected.matches(record) else {
            return .inconclusive(code: "paypipe.query_mismatch", reason: "the AUTH record's amount or currency differs from the payment's")
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
