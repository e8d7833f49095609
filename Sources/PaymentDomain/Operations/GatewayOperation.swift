/// One gateway request an operation sends, as a processor-neutral value its connector translates into its wire form
/// (docs/connectors.md): an update of the authorisation's settle status or a refund of the settled payment for a
/// processor whose operations are settlement updates (``OperationProtocol/Transport/Operations/settlementUpdates``), or
/// the processor's own capture, reversal or refund (``OperationProtocol/Transport/Operations/processorOperations``).
/// Amounts are minor units.
public enum GatewayOperation: Sendable, Equatable, Hashable {
    /// An update of the authorisation `transactionReference`: its settle status and settle amount.
    /// `settleStatus` nil leaves it as it is (a lower settle amount alone).
    case transactionUpdate(transactionReference: String, settleStatus: SettleStatus?, settleBaseAmount: Int64?)
    /// A refund of the settled (or, for processor operations, captured) payment `parentTransactionReference`, always
    /// with its amount.
    case refund(parentTransactionReference: String, baseAmount: Int64)
    /// The processor's own capture of its authorisation `transactionReference`.
    case capture(transactionReference: String, amount: Int64)
    /// The processor's own reversal of its uncaptured authorisation.
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

    /// Whether this is a settlement-updates processor's request (an update or a refund); captures and reversals are
    /// processor operations.
    public var isWebservices: Bool {
        switch self {
        case .transactionUpdate, .refund: true
        case .capture, .reversal: false
        }
    }
}
