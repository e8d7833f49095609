import JSON

/// One Trust Payments Webservices request an operation sends (trustpayments.md §8), as a value: the transport adds
/// the envelope (`alias`, `version`, `requestreference`). Amounts are minor units, sent as decimal strings like every
/// amount on the wire.
public enum GatewayOperation: Sendable, Equatable, Hashable {
    /// TRANSACTIONUPDATE of the AUTH: `filter {sitereference, transactionreference}`, `updates {…}`.
    /// `settleStatus` nil leaves it as it is (a lower `settlebaseamount` alone).
    case transactionUpdate(transactionReference: String, settleStatus: SettleStatus?, settleBaseAmount: Int64?)
    /// REFUND of a settled AUTH, always with its `baseamount`.
    case refund(parentTransactionReference: String, baseAmount: Int64)

    /// Suspends an AUTH that was answered unsuspended (manual capture when `settlestatus "2"` on the AUTH itself was
    /// not sent or not honoured).
    public static func suspend(_ transactionReference: String) -> GatewayOperation {
        .transactionUpdate(transactionReference: transactionReference, settleStatus: .suspended, settleBaseAmount: nil)
    }

    public var requestType: String {
        switch self {
        case .transactionUpdate: "TRANSACTIONUPDATE"
        case .refund: "REFUND"
        }
    }

    /// The request object (one element of the envelope's `request[]`).
    public func requestObject(siteReference: String) -> JSONValue {
        switch self {
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
