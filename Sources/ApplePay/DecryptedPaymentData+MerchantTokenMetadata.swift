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

extension DecryptedPaymentData {
    /// One `merchantTokenMetadata.cardArt` image reference.
    public struct CardArt: Sendable, Codable, Equatable {
        public var url: String?
        public var width: Int?
        public var height: Int?

        public init(url: String?, width: Int?, height: Int?) {
            self.url = url
            self.width = width
            self.height = height
        }
    }
}

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
