import Crypto
import Foundation
import Pipeline

/// What decrypt does with a TapPay job (``PaymentJob/tapPayPrime``): no token to verify or decrypt (the app gave the
/// Apple Pay token to TapPay's SDK), so the prime and its publish time are stored for the authorize stage.
public enum TapPayJob {
    /// The replay guard's key for a prime (decrypt's `transaction_id` claim): a prime used by two jobs is
    /// `token_replayed`. Its SHA-256, never the prime itself.
    public static func transactionId(prime: String) -> String {
        "tappay-prime:" + Hex.encode(SHA256.hash(Array(prime.utf8)))
    }

    /// Why a job does not fit its merchant's connector (`malformed_token`), or nil: TapPay merchants' jobs carry a
    /// prime, everyone else's an Apple Pay token.
    public static func mismatch(_ job: PaymentJob, connector: ConnectorKind?) -> String? {
        switch (connector == .tapPay, job.tapPayPrime != nil) {
        case (true, false): "the merchant uses TapPay: its jobs carry tapPayPrime, not applePayToken"
        case (false, true): "tapPayPrime is only for merchants whose gateway is TapPay"
        default: nil
        }
    }
}

extension StoredPaymentData {
    /// The prime's name in stored payment data (and the job's member carrying it).
    static let tapPayPrimeName = "tapPayPrime"

    /// A TapPay job's prime (``PaymentJob/tapPayPrime``), in place of any Apple Pay data: single use, 90 s of life, or
    /// 30 days for a deferred payment's prime (``tapPayPrimeKind``).
    public var tapPayPrime: String? {
        get { credential?.name == Self.tapPayPrimeName ? credential?.value : nil }
        set { credential = ProcessorCredential(name: Self.tapPayPrimeName, value: newValue, publishedAt: tapPayPrimePublishedAt,
                                               amountPending: tapPayPrimeKind == .deferred) }
    }

    /// Which lifetime the prime has: a job with `amountPending` carries a deferred payment's prime.
    public var tapPayPrimeKind: TapPayPrimeAge.Kind {
        credential?.name == Self.tapPayPrimeName && credential?.amountPending == true ? .deferred : .ordinary
    }

    /// When the prime's job was published (the AMQP `timestamp`, else its first receipt): the prime's age is measured
    /// from here (``TapPayPrimeAge``).
    public var tapPayPrimePublishedAt: Date? {
        get { credential?.name == Self.tapPayPrimeName ? credential?.publishedAt : nil }
        set { credential = ProcessorCredential(name: Self.tapPayPrimeName, value: tapPayPrime, publishedAt: newValue,
                                               amountPending: tapPayPrimeKind == .deferred) }
    }

    /// What decrypt stores for a TapPay job: the prime, its kind and publish time, with the job's contacts; no card data.
    public static func tapPay(prime: String, kind: TapPayPrimeAge.Kind = .ordinary, publishedAt: Date, billingContact: [String: String]?,
                              shippingContact: [String: String]?) -> StoredPaymentData {
        .credential(ProcessorCredential(name: tapPayPrimeName, value: prime, publishedAt: publishedAt, amountPending: kind == .deferred),
                    billingContact: billingContact, shippingContact: shippingContact)
    }
}
