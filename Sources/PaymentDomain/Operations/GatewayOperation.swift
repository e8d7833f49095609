import JSON

/// One gateway request an operation sends, as a value: a Trust Payments Webservices request (trustpayments.md §8; the
/// transport adds the envelope: `alias`, `version`, `requestreference`), or another connector's capture, reversal or
/// refund (docs/connectors.md), which its connector translates. Amounts are minor units.
public enum GatewayOperation: Sendable, Equatable, Hashable {
    /// TRANSACTIONUPDATE of the AUTH: `filter {sitereference, transactionreference}`, `updates {…}`.
    /// `settleStatus` nil leaves it as it is (a lower `settlebaseamount` alone).
    case transactionUpdate(transactionReference: String, settleStatus: SettleStatus?, settleBaseAmount: Int64?)
    /// REFUND of a settled AUTH, always with its `baseamount`; for another connector, its refund of the captured
    /// payment `parentTransactionReference` (OPP `RF`, TapPay `/tpc/transaction/refund`).
    case refund(parentTransactionReference: String, baseAmount: Int64)
    /// Another connector's capture of its authorisation `transactionReference` (OPP `CP`, TapPay `/tpc/transaction/cap`).
    case capture(transactionReference: String, amount: Int64)
    /// Another connector's reversal of its uncaptured authorisation (OPP `RV`).
    case reversal(transactionReference: String)

    /// Suspends an AUTH that was answered unsuspended (manual capture when `settlestatus "2"` on the AUTH itself was
    /// not sent or not honoured).
    public static func suspend(_ transactionReference: String) -> GatewayOperation {
        .transactionUpdate(transactionReference: transactionReference, settleStatus: .suspended, settleBaseAmount: nil)
    }

    public var requestType: String {
        switch self {
        case .transactionUpdate: "TRANSACTIONUPDATE"
        case .refund: "REFUND"
        case .capture: "CAPTURE"
        case .reversal: "REVERSAL"
        }
    }

    /// The processor's id of the payment the request acts on (a REFUND's parent).
    public var targetReference: String {
        switch self {
        case .transactionUpdate(let reference, _, _), .refund(let reference, _), .capture(let reference, _), .reversal(let reference): reference
        }
    }

    /// Whether this is a Trust Payments Webservices request (the other cases are other connectors').
    public var isWebservices: Bool {
        switch self {
        case .transactionUpdate, .refund: true
        case .capture, .reversal: false
        }
    }

    /// The request object (one element of the envelope's `request[]`); `null` for another connector's request, which
    /// Trust Payments has no form for (its operations are TRANSACTIONUPDATEs).
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
