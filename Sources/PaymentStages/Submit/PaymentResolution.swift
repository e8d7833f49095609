import Foundation
import Pipeline
import Postgres

/// An operator's decision on a `needs_review` payment (`paypipe payment resolve`), after checking the gateway's
/// back office: the payment moves to `authorized`, `declined` or `failed`, the decision and its reason are recorded
/// in the audit trail under the operator's name, and the payment queues for notification.
public struct PaymentResolution: Sendable {
    public static let targets: [PaymentStatus] = [.authorized, .declined, .failed]
    /// The `error_code` of a payment an operator declined or failed.
    public static let errorCode = "resolved_by_operator"

    public enum ResolutionError: Error, Equatable, CustomStringConvertible {
        case unknownPayment(UUID)
        case notInReview(UUID, PaymentStatus)
        case invalidTarget(String)
        case missingReason

        public var description: String {
            switch self {
            case .unknownPayment(let id): "no payment \(id)"
            case .notInReview(let id, let status): "payment \(id) is \(status.rawValue), not needs_review"
            case .invalidTarget(let text): "--as must be authorized, declined or failed, not '\(text)'"
            case .missingReason: "a --reason is required (it is kept in the audit trail)"
            }
        }
    }

    public let paymentId: UUID
    public let status: PaymentStatus
    public let reason: String
    public let actor: String

    /// Validates the operator's input; `actor` names who decided (e.g. the login name).
    public init(paymentId: UUID, as target: String, reason: String, actor: String) throws(ResolutionError) {
        guard let status = PaymentStatus(rawValue: target), Self.targets.contains(status) else { throw .invalidTarget(target) }
        let trimmed = reason.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw .missingReason }
        self.paymentId = paymentId
        self.status = status
        self.reason = String(trimmed.prefix(500))
        self.actor = actor
    }

    /// Applies the decision in one transaction and returns the hand-off to publish to notification.
    public func apply(on connection: PostgresConnection) throws -> StageMessage {
        try connection.transaction { transaction in
            let payments = PaymentStore()
            guard let payment = try payments.load(paymentId, forUpdate: true, on: transaction) else {
                throw ResolutionError.unknownPayment(paymentId)
            }
            guard payment.status == .needsReview else { throw ResolutionError.notInReview(paymentId, payment.status) }
            try payments.transition(
                paymentId, from: .needsReview, to: status, actor: "operator:\(actor)",
                errorCode: status == .authorized ? nil : Self.errorCode, detail: reason, on: transaction)
            // The notification continues the payment's trace.
            return try payments.tracedMessage(paymentId, on: transaction) ?? payment.message
        }
    }
}
