/// What a TRANSACTIONQUERY for one order reference established.
public enum TransactionQueryResult: Sendable, Equatable {
    /// The gateway holds an AUTH for the order: its result is adopted as the payment's outcome.
    case found(GatewayResult)
    /// The gateway confirms it has no transaction for the order: the AUTH may be sent again.
    case notFound
    /// No usable answer (transport failure, bad signature, query error, or a record whose outcome is itself
    /// uncertain): ask again later, and give up to manual review after a bounded number of tries.
    case inconclusive(code: String, reason: String)
}
