extension ApplePayToken {
    /// `PKPaymentToken.paymentMethod`: display data only, never used for decisions.
    public struct PaymentMethod: Sendable, Equatable, Codable {
        public var displayName: String?
        public var network: String?
        public var type: String?

        public init(displayName: String?, network: String?, type: String?) {
            self.displayName = displayName
            self.network = network
            self.type = type
        }
    }
}
