/// One failure code of the merchant and operator contract: stored in `payments.error_code` and sent in webhooks
/// (`error.code`) when it ends a payment, or carried by a dead letter (`x-paypipe-error-code`) or a retry.
///
/// Codes only ever get added (docs/failure-codes.md, generated from ``FailureCatalogue``): publishers, merchants and
/// runbooks match on them.
public struct FailureCode: Sendable, Hashable, CustomStringConvertible {
    /// What happens to the payment or message that fails with the code.
    public enum Outcome: String, Sendable, Hashable, CaseIterable {
        /// The payment ends `failed` and the merchant is notified.
        case paymentFailed = "payment `failed`"
        /// The payment ends `declined` and the merchant is notified.
        case paymentDeclined = "payment `declined`"
        /// The payment ends `needs_review` (an operator decides) and the merchant is notified.
        case needsReview = "payment `needs_review`"
        /// The message goes to the stage's dead-letter queue with the code; no payment changes.
        case deadLettered = "dead-lettered"
        /// The message is retried later (retry tiers, a wait or a reconnect); the payment keeps its status.
        case retried = "retried"
        /// An operation (capture, void, refund) ends `failed` and `payment.operation_failed` is sent; the payment's
        /// money is unchanged.
        case operationFailed = "operation `failed`"
        /// An operation whose outcome is not known stays open for an operator; nothing is sent again and no event goes
        /// out until it is resolved.
        case operationNeedsReview = "operation for review"
        /// An operator command refuses its input (e.g. `paypipe merchant apply`); no payment or message is involved.
        case refusedByCommand = "command refused"

        /// Whether the payment's result, with this code, is sent to the merchant.
        public var isReportedToMerchant: Bool {
            switch self {
            case .paymentFailed, .paymentDeclined, .needsReview, .operationFailed: true
            case .deadLettered, .retried, .refusedByCommand, .operationNeedsReview: false
            }
        }
    }

    /// The code, or for a family (``isFamily``) its form, e.g. `gateway_<errorcode>`.
    public let code: String
    /// Every outcome the code can have, most usual first (a code ending a payment or waiting, depending on the case).
    public let outcomes: [Outcome]
    /// The stage (or `runtime`) that produces it.
    public let origin: String
    public let meaning: String

    public init(_ code: String, _ outcomes: [Outcome], origin: String, _ meaning: String) {
        self.code = code
        self.outcomes = outcomes
        self.origin = origin
        self.meaning = meaning
    }

    /// A family stands for many codes: `gateway_` followed by the gateway's numeric error code (or `unknown`).
    public var isFamily: Bool { code.hasSuffix(">") }

    /// Permanent: retrying cannot change the result (the payment or message is settled with this code).
    public var isPermanent: Bool { !outcomes.contains(.retried) }

    /// Sent to the merchant in the payment's webhook (`error.code`) in at least one of its outcomes.
    public var isReportedToMerchant: Bool { outcomes.contains { $0.isReportedToMerchant } }

    /// Whether `text` is this code, or belongs to this family.
    public func matches(_ text: String) -> Bool {
        guard isFamily, let open = code.firstIndex(of: "<") else { return text == code }
        let prefix = code[..<open]
        guard text.hasPrefix(prefix) else { return false }
        let rest = text.dropFirst(prefix.count)
        // Digits, or dot-separated groups of them (a result code such as `ddd.ddd.ddd`).
        return rest == "unknown" || rest.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
    }

    public var description: String { code }
}
