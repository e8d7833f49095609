import Pipeline

/// A decoded job for the decrypt stage: usable, or addressed to a merchant and job but invalid (which
/// still becomes a `failed` payment that the merchant is notified of).
public enum DecryptInput: Sendable {
    case job(PaymentJob)
    case invalid(merchantId: String, jobId: String, contentHash: [UInt8], reason: String)
}
