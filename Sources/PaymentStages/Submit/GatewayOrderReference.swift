import Foundation

/// The `orderreference` PayPipe sends to the gateway: unique per payment, so that a status query by it can only
/// find this payment's AUTH. The merchant's `orderReference` is not unique (a retried order is a new job with the
/// same reference, as the job contract's own example shows); it stays unchanged in PayPipe's events and webhooks.
///
/// Form: `<merchant reference>.<first 12 hex digits of the payment id>`, so it still reads as the merchant's order
/// in the gateway's back office. The field's length limit is not in any stored source (Trust Payments documents
/// `orderreference` as "Alphanumeric" without a length, see docs/submit.md), so PayPipe stays within
/// ``maximumLength`` (36, the length of a payment id) and sends the payment id alone when the merchant's reference
/// is too long for the combined form.
public enum GatewayOrderReference {
    public static let maximumLength = 36
    static let suffixLength = 12

    public static func forPayment(merchantReference: String, paymentId: UUID) -> String {
        let id = paymentId.uuidString.lowercased()
        let suffix = String(id.replacingOccurrences(of: "-", with: "").prefix(suffixLength))
        let combined = "\(merchantReference).\(suffix)"
        return !merchantReference.isEmpty && combined.utf8.count <= maximumLength ? combined : id
    }
}
