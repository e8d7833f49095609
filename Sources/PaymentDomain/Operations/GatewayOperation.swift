/// One gateway request an operation sends, as what it is, processor-neutral: its connector translates it into its wire
/// form and names it (docs/connectors.md; the names it is stored and reported under are the connector's,
/// ``OperationProtocol/Transport/requestNames``). Amounts are minor units.
public enum GatewayOperation: Sendable, Equatable, Hashable {
    /// Captures the authorisation `transactionReference`: `amount` of it, the rest released; nil captures all of it as
    /// authorised (a processor whose capture names its amount is always given one).
    case capture(transactionReference: String, amount: Int64?)
    /// Cancels the payment before settlement: the uncaptured authorisation, or what was captured of it.
    case void(transactionReference: String)
    /// Lowers the amount a captured payment settles at to `amount`, before settlement (a refund of part of it).
    case lowerCapture(transactionReference: String, amount: Int64)
    /// Holds an authorisation the processor would otherwise settle (manual capture not honoured on the AUTH itself)
    /// until an operation captures or voids it.
    case hold(transactionReference: String)
    /// Refunds `amount` of the settled (or, at a processor that refunds captures, captured) payment
    /// `parentTransactionReference`.
    case refund(parentTransactionReference: String, amount: Int64)

    /// The processor's id of the payment the request acts on (a refund's parent).
    public var targetReference: String {
        switch self {
        case .capture(let reference, _), .void(let reference), .lowerCapture(let reference, _), .hold(let reference),
             .refund(let reference, _): reference
        }
    }

    /// What the request is, in reasons and logs.
    public var name: String {
        switch self {
        case .capture: "capture"
        case .void: "void"
        case .lowerCapture: "lowered capture"
        case .hold: "hold"
        case .refund: "refund"
        }
    }

    /// The settle status and amount to settle the request sets, at a processor whose operations update the payment's
    /// settlement (``OperationProtocol/Transport/Operations/settlementUpdates``); nil for a refund, which is a
    /// transaction of its own. A nil status leaves the status as it is, a nil amount the amount.
    public var settlementUpdate: (settleStatus: SettlementState?, settleAmount: Int64?)? {
        switch self {
        case .capture(_, let amount): (.pendingSettlement, amount)
        case .void: (.cancelled, nil)
        case .lowerCapture(_, let amount): (nil, amount)
        case .hold: (.suspended, nil)
        case .refund: nil
        }
    }
}
