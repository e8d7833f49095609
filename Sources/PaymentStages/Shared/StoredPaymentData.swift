import ApplePay
import Foundation

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
    /// A TapPay job's prime (``PaymentJob/tapPayPrime``), in place of any Apple Pay data: single use, 90 s of life.
    public var tapPayPrime: String?
    /// When the prime's job was published (the AMQP `timestamp`, else its first receipt): the prime's age is measured
    /// from here (``TapPayPrimeAge``).
    public var tapPayPrimePublishedAt: Date?

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

    /// What decrypt stores for a TapPay job: the prime and its publish time, with the job's contacts; no card data.
    public static func tapPay(prime: String, publishedAt: Date, billingContact: [String: String]?, shippingContact: [String: String]?) -> StoredPaymentData {
        var data = StoredPaymentData(decrypted: nil, walletToken: nil, paymentMethodDisplayName: nil, paymentMethodNetwork: nil,
                                     billingContact: billingContact, shippingContact: shippingContact)
        data.tapPayPrime = prime
        data.tapPayPrimePublishedAt = publishedAt
        return data
    }
}
