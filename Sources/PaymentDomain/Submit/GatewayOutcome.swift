/// What one gateway answer (or the failure to get one) means for the payment.
///
/// The raw value is stored in `gateway_attempts.outcome`.
public enum GatewayOutcome: String, Sendable, CaseIterable {
    /// Error code 0: the acquirer authorised the payment.
    case authorized
    /// The issuer (or 3-D Secure) refused: final, never retried.
    case declined
    /// The request itself is wrong (field, JWT, configuration): final, retrying cannot help.
    case permanentError = "permanent_error"
    /// The gateway may or may not have processed the request: query before any resend.
    case uncertain
    /// Known not to have been processed (refused before sending, record locked, generic retry): safe to resend.
    case transient
    /// The gateway asks for manual investigation (60034): an operator decides.
    case needsReview = "needs_review"
}
