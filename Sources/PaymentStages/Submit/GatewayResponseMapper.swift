import JWT

/// Pure mapping of Trust Payments answers to ``GatewayOutcome``s: no I/O, so every code class is unit-tested.
///
/// The default for anything not listed is `uncertain`: treating an unknown answer as "declined" or "failed" could
/// abandon a payment the acquirer actually charged, while "uncertain" only costs a TRANSACTIONQUERY.
public enum GatewayResponseMapper {
    public static let declinedCodes: Set<Int> = [70000, 60022, 60042, 71000, 72000]
    public static let permanentCodes: Set<Int> = [10300, 10301, 10302, 60018, 60025, 60040]
    public static let uncertainCodes: Set<Int> = Set(50000...50014).union([60010, 70001, 79000, 99999])
    public static let transientCodes: Set<Int> = [79001, 88000]
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
        if item["customeroutput"]?.stringValue == "THREEDREDIRECT" {
            // A challenge needs the cardholder, who is not here: the server-to-server AUTH cannot complete.
            result.outcome = .declined
            result.reason = "3ds_challenge_required"
        }
        return result
    }

    /// Interprets the verified claims of a TRANSACTIONQUERY answer.
    ///
    /// Only a successful query (errorcode 0) that lists no AUTH record proves "no such transaction"; a record whose
    /// own outcome is uncertain or transient proves nothing either way.
    public static func queryResult(fromClaims claims: JSONValue) -> TransactionQueryResult {
        guard let items = responseItems(claims), let item = mainItem(items) else {
            return .inconclusive(code: "paypipe.invalid_response", reason: "query response has no version 1.00 response[]")
        }
        guard item["errorcode"]?.stringValue == "0" else {
            return .inconclusive(code: item["errorcode"]?.stringValue ?? "paypipe.invalid_response",
                                 reason: "query failed: \(item["errormessage"]?.stringValue ?? "no message")")
        }
        let records = item["records"]?.arrayValue ?? []
        let auths = records.filter { ($0["requesttypedescription"]?.stringValue ?? "AUTH") == "AUTH" }
        guard let record = auths.last else {
            let found = item["found"]?.stringValue.flatMap { Int($0) } ?? records.count
            return found == 0 ? .notFound : .inconclusive(code: "paypipe.query_unrecognised", reason: "query found records but no AUTH")
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
