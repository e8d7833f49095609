extension DecryptedPaymentData {
    /// `paymentData`: 3-D Secure cryptogram data or EMV data.
    public struct PaymentData: Sendable, Codable, Equatable {
        /// Base64 (3DSecure).
        public var onlinePaymentCryptogram: String?
        /// Must be forwarded when present (3DSecure).
        public var eciIndicator: String?
        /// Base64 (EMV).
        public var emvData: String?
        /// Hex (EMV).
        public var encryptedPINData: String?

        public init(
            onlinePaymentCryptogram: String? = nil, eciIndicator: String? = nil, emvData: String? = nil,
            encryptedPINData: String? = nil
        ) {
            self.onlinePaymentCryptogram = onlinePaymentCryptogram
            self.eciIndicator = eciIndicator
            self.emvData = emvData
            self.encryptedPINData = encryptedPINData
        }

        var masked: PaymentData {
            PaymentData(
                onlinePaymentCryptogram: onlinePaymentCryptogram.map { _ in "***" }, eciIndicator: eciIndicator,
                emvData: emvData.map { _ in "***" }, encryptedPINData: encryptedPINData.map { _ in "***" })
        }
    }
}
