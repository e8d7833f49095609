import ApplePay

/// What the decrypt stage stores (encrypted) for the later stages: the card data Apple's token carried,
/// or for gateway-decrypts merchants the verified token itself, plus the job's contact details.
/// Crypto-shredded together once the payment is terminal.
public struct StoredPaymentData: Codable, Sendable {
    public var decrypted: DecryptedPaymentData?
    /// The token JSON as the backend sent it, for gateway-decrypts mode (`wallettoken`).
    public var walletToken: String?
    public var paymentMethodDisplayName: String?
    public var paymentMethodNetwork: String?
    public var billingContact: [String: String]?
    public var shippingContact: [String: String]?

    public init(
        decrypted: DecryptedPaymentData?, walletToken: String?, paymentMethodDisplayName: String?,
        paymentMethodNetwork: String?, billingContact: [String: String]?, shippingContact: [String: String]?
    ) {
        self.decrypted = decrypted
        self.walletToken = walletToken
        self.paymentMethodDisplayName = paymentMethodDisplayName
        self.paymentMethodNetwork = paymentMethodNetwork
        self.billingContact = billingContact
        self.shippingContact = shippingContact
    }
}
