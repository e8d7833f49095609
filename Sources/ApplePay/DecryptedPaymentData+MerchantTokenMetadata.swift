extension DecryptedPaymentData {
    /// `merchantTokenMetadata` of merchant-token (MPAN) payments.
    public struct MerchantTokenMetadata: Sendable, Codable, Equatable {
        public var cardArt: [CardArt]?
        public var cardMetadata: CardMetadata?

        public init(cardArt: [CardArt]?, cardMetadata: CardMetadata?) {
            self.cardArt = cardArt
            self.cardMetadata = cardMetadata
        }
    }
}
