import Foundation

/// The `orderreference` PayPipe sends to the gateway: unique per payment, so that a status query by it can only
/// find this payment's AUTH. The merchant's `orderReference` is not unique (a retried order is a new job with the
/// same reference, as the job contract's own example shows); it stays unchanged in PayPipe's events and webhooks.
///
/// Form: `<merchant reference>.<first 12 hex digits of the payment id>`, so it still reads as the merchant's order
/// in the gateway's back office. The strictest connector gives the field 25 characters and may truncate a longer
/// value (docs/submit.md cites the field specification). Truncation would cut the payment-id suffix first and make retries of one order share a reference
/// again, so the whole reference stays within ``maximumLength``: when the merchant's reference is too long for the
/// combined form, the payment id alone is sent, as its first 25 hex digits (100 bits).
public enum GatewayOrderReference {
    public static let maximumLength = 25
    static let suffixLength = 12

    public static func forPayment(merchantReference: String, paymentId: UUID) -> String {
        let hex = paymentId.paymentIDHex
        let combined = "\(merchantReference).\(hex.prefix(suffixLength))"
        return !merchantReference.isEmpty && combined.utf8.count <= maximumLength ? combined : String(hex.prefix(maximumLength))
    }
}
