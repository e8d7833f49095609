extension ApplePayToken {
    /// The `paymentData.version` values PayPipe supports.
    public enum Version: String, Sendable, Equatable, CaseIterable {
        /// ECDH P-256 + AES-256-GCM.
        case ecV1 = "EC_v1"
        /// RSA-OAEP key wrap + AES-GCM (regions where ECC is not allowed).
        case rsaV1 = "RSA_v1"
    }
}
