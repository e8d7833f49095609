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
