import Crypto
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
