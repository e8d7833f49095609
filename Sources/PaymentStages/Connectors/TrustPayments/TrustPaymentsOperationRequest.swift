import JSON
import PaymentDomain

/// Trust Payments' form of an operation (trustpayments.md §8): a Webservices request object, to which the transport
/// adds the envelope (`alias`, `version`, `requestreference`). Its operations are TRANSACTIONUPDATEs of the AUTH and
/// REFUNDs of the settled AUTH.
extension GatewayOperation {
    /// The request object (one element of the envelope's `request[]`); `null` for a processor's own capture or
    /// reversal, which Trust Payments has no form for.
    public func requestObject(siteReference: String) -> JSONValue {
        switch self {
        case .capture, .reversal:
            return .null
        case .transactionUpdate(let reference, let settleStatus, let settleBaseAmount):
            // The filter's shape is TRANSACTIONQUERY's: arrays of {"value": …} (§8, [doc][sdk]).
            let filter: JSONValue = .object([
                (key: "sitereference", value: .array([.object([(key: "value", value: .string(siteReference))])])),
                (key: "transactionreference", value: .array([.object([(key: "value", value: .string(reference))])])),
            ])
            let updates = JSONValue.object(omittingAbsent: [
                ("settlestatus", settleStatus.map { .string($0.wireValue) }),
                ("settlebaseamount", settleBaseAmount.map { .string(String($0)) }),
            ])
            return .object([
                (key: "requesttypedescriptions", value: .array([.string(requestType)])),
                (key: "filter", value: filter),
                (key: "updates", value: updates),
            ])
        case .refund(let parent, let baseAmount):
            return .object([
                (key: "requesttypedescriptions", value: .array([.string(requestType)])),
                (key: "sitereference", value: .string(siteReference)),
                (key: "parenttransactionreference", value: .string(parent)),
                (key: "baseamount", value: .string(String(baseAmount))),
            ])
        }
    }
}
