extension DecryptedPaymentData {
    /// `merchantTokenMetadata.cardMetadata`: the funding card's expiry and last digits.
    public struct CardMetadata: Sendable, Codable, Equatable {
        public var expirationDate: String?
        public var fpanSuffix: String?

        public init(expirationDate: String?, fpanSuffix: String?) {
            self.expirationDate = expirationDate
            self.fpanSuffix = fpanSuffix
        }
    }
}
