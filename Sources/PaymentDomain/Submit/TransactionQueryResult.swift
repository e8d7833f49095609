/// What a processor's status query for one payment's reference established (each connector maps its own answer).
public enum TransactionQueryResult: Sendable, Equatable {
    /// The gateway holds an AUTH for the order: its result is adopted as the payment's outcome.
    case found(GatewayResult)
    /// The gateway confirms it has no transaction for the order: the AUTH may be sent again.
    case notFound
    /// No usable answer (transport failure, bad signature, query error, or a record whose outcome is itself
    /// uncertain): ask again later, and give up to manual review after a bounded number of tries.
    case inconclusive(code: String, reason: String)

    /// What a payment's own authorisation record must match to be adopted: its amount in minor units, its currency and
    /// the reference queried (a record naming another one is not this payment's). Each connector compares its
    /// record's own fields with it; nil compares nothing.
    public struct Expected: Sendable, Equatable {
        public let amountMinor: Int64?
        public let currency: String?
        public let orderReference: String?

        public init(amountMinor: Int64?, currency: String?, orderReference: String? = nil) {
            self.amountMinor = amountMinor
            self.currency = currency
            self.orderReference = orderReference
        }
    }
}
