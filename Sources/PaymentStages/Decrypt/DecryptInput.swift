import Foundation
import Pipeline

/// A decoded job for the decrypt stage: usable, or addressed to a merchant and job but invalid (which
/// still becomes a `failed` payment that the merchant is notified of). `publishedAt` is the delivery's AMQP
/// `timestamp` property (see ``VerificationClock``).
public enum DecryptInput: Sendable {
    case job(PaymentJob, publishedAt: Date? = nil)
    case invalid(merchantId: String, jobId: String, contentHash: [UInt8], reason: String)
}
