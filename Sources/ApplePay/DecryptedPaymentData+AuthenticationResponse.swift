extension DecryptedPaymentData {
    /// One entry of `authenticationResponses` (multi-merchant payments).
    public struct AuthenticationResponse: Sendable, Codable, Equatable {
        public var merchantIdentifier: String?
        /// Base64 cryptogram for this merchant.
        public var authenticationData: String?
        public var transactionAmount: Int64?

        public init(merchantIdentifier: String?, authenticationData: String?, transactionAmount: Int64?) {
            self.merchantIdentifier = merchantIdentifier
            self.authenticationData = authenticationData
            self.transactionAmount = transactionAmount
        }

        var masked: AuthenticationResponse {
            AuthenticationResponse(
                merchantIdentifier: merchantIdentifier, authenticationData: authenticationData.map { _ in "***" },
                transactionAmount: transactionAmount)
        }
    }
}
