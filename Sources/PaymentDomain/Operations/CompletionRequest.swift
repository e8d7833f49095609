import Foundation
import JSON

/// `payment.complete.requested` on `paypipe.jobs` (docs/job-contract.md, "Deferred payments (amount set later)";
/// docs/schemas/operation.schema.json): the amount of a payment whose job had `amountPending`, which sends its
/// authorisation with that amount. `{operationId, merchantId, paymentId, amount}`, all required; unknown fields are
/// ignored. Not an ``OperationRequest``: it acts on a payment before its authorisation, not on an authorised one.
public struct CompletionRequest: Sendable, Equatable {
    public static let routingKey = "payment.complete.requested"

    public let operationId: String
    public let merchantId: String
    public let paymentId: UUID
    /// Minor units, in the payment's currency.
    public let amount: Int64

    public init(operationId: String, merchantId: String, paymentId: UUID, amount: Int64) {
        (self.operationId, self.merchantId, self.paymentId, self.amount) = (operationId, merchantId, paymentId, amount)
    }

    /// Strict: the same identifier rules as every operation; `paymentId` a UUID; `amount` an integer of 1 to
    /// ``OperationRequest/maximumAmount`` minor units. Errors as ``OperationRequest/DecodingError``.
    public static func decode(_ body: [UInt8]) throws(OperationRequest.DecodingError) -> CompletionRequest {
        let (object, merchantId, operationId) = try OperationRequest.addressed(body)
        func invalid(_ reason: String) -> OperationRequest.DecodingError { .invalid(merchantId: merchantId, operationId: operationId, reason: reason) }
        guard let text = object["paymentId"]?.stringValue, let paymentId = UUID(uuidString: text) else {
            throw invalid("paymentId must be a UUID")
        }
        guard case .integer(let amount)? = object["amount"], (1...OperationRequest.maximumAmount).contains(amount) else {
            throw invalid("amount is required: an integer of 1 to \(OperationRequest.maximumAmount) minor units")
        }
        return CompletionRequest(operationId: operationId, merchantId: merchantId, paymentId: paymentId, amount: amount)
    }
}

/// The rules of a payment whose amount is set later (a job with `amountPending`). Pure: the operations worker reads
/// the payment, decides here with its batch clock, and applies.
public enum DeferredAmount {
    /// What the completion and the upkeep read of a payment.
    public struct Snapshot: Sendable, Equatable {
        public let merchantId: String
        public let jobId: String
        public let status: PaymentStatus
        /// The job's amount (the most the completion may charge) until completed; the completion's after.
        public let amountMinor: Int64?
        /// When a completion set the amount; nil before.
        public let completedAt: Date?
        /// When PayPipe first received the job: the credential's age is counted from here (the job's publish time is
        /// earlier, so this never expires a credential early; the connector's own check at send time is exact).
        public let receivedAt: Date
        /// The trace context the payment's row keeps (``StageMessage/traceparent``): the completion's hand-off
        /// continues the job's trace, not the operation's.
        public let traceparent: String?
        public let tracestate: String?

        public init(merchantId: String, jobId: String, status: PaymentStatus, amountMinor: Int64?, completedAt: Date?, receivedAt: Date,
                    traceparent: String? = nil, tracestate: String? = nil) {
            (self.merchantId, self.jobId, self.status) = (merchantId, jobId, status)
            (self.amountMinor, self.completedAt, self.receivedAt) = (amountMinor, completedAt, receivedAt)
            (self.traceparent, self.tracestate) = (traceparent, tracestate)
        }

        /// The payment's hand-off, in its own trace.
        public func message(paymentId: UUID) -> StageMessage {
            StageMessage(paymentId: paymentId, merchantId: merchantId, jobId: jobId, traceparent: traceparent, tracestate: tracestate)
        }

        /// As it is once a completion of `amount` at `at` is applied (a later message of the same batch sees it).
        public func completed(amount: Int64, at: Date) -> Snapshot {
            Snapshot(merchantId: merchantId, jobId: jobId, status: .decrypted, amountMinor: amount, completedAt: at, receivedAt: receivedAt,
                     traceparent: traceparent, tracestate: tracestate)
        }

        /// As it is once failed.
        public func failed() -> Snapshot {
            Snapshot(merchantId: merchantId, jobId: jobId, status: .failed, amountMinor: amountMinor, completedAt: completedAt, receivedAt: receivedAt,
                     traceparent: traceparent, tracestate: tracestate)
        }
    }

    public enum Completion: Sendable, Equatable {
        /// `awaiting_amount → decrypted` with this amount, handed to authorize.
        case complete(amount: Int64)
        /// Completed before with the same amount (a redelivery or a repeat): nothing to write; hand to authorize again
        /// only while it is still `decrypted` (a hand-off lost after the commit).
        case repeated(handOff: Bool)
        /// The credential's lifetime is over: `awaiting_amount → failed` (`prime_expired`), nothing sent.
        case expire
        /// Not now: the payment is unknown yet or not parked yet (still in decrypt or authorize); retried.
        case wait(code: String, reason: String)
        /// Never: dead-lettered with the code.
        case refuse(code: String, reason: String)
    }

    /// Whether a credential of `lifetime` seconds, received at `receivedAt`, has expired at `now`.
    public static func hasExpired(receivedAt: Date, now: Date, lifetime: TimeInterval) -> Bool {
        now.timeIntervalSince(receivedAt) >= lifetime
    }

    /// The waiting payments whose credential expired at `now`; `lifetime` gives a merchant's connector's (nil: it has
    /// none, and its payments are left to an operator).
    public static func expired(_ waiting: [(message: StageMessage, receivedAt: Date)], now: Date,
                               lifetime: (String) -> TimeInterval?) -> [StageMessage] {
        waiting.compactMap { payment in
            lifetime(payment.message.merchantId).flatMap { hasExpired(receivedAt: payment.receivedAt, now: now, lifetime: $0) ? payment.message : nil }
        }
    }

    /// The completion of `payment` (nil: none of the merchant's) with `amount` at `now`, for a connector whose deferred
    /// credential lives `lifetime` seconds (nil: the merchant's connector has no deferred amounts).
    public static func complete(_ payment: Snapshot?, merchantId: String, amount: Int64, now: Date, lifetime: TimeInterval?) -> Completion {
        guard let payment, payment.merchantId == merchantId else {
            return .wait(code: "operation_payment_unknown", reason: "no payment of merchant \(merchantId) has that id (yet)")
        }
        if payment.completedAt != nil {
            guard payment.amountMinor == amount else {
                return .refuse(code: "payment_not_awaiting_amount", reason: "the payment was completed with another amount")
            }
            return .repeated(handOff: payment.status == .decrypted)
        }
        switch payment.status {
        case .received, .decrypted:
            return .wait(code: "completion_too_early", reason: "the payment is \(payment.status.rawValue), not yet awaiting its amount")
        case .awaitingAmount:
            break
        default:
            return .refuse(code: "payment_not_awaiting_amount", reason: "the payment is \(payment.status.rawValue): it does not await an amount")
        }
        guard let lifetime else {
            return .refuse(code: "payment_not_awaiting_amount", reason: "the merchant's connector has no deferred amounts")
        }
        if hasExpired(receivedAt: payment.receivedAt, now: now, lifetime: lifetime) { return .expire }
        guard let maximum = payment.amountMinor, amount <= maximum else {
            return .refuse(code: "amount_exceeds_maximum",
                           reason: "amount \(amount) is above the job's amount \(payment.amountMinor.map(String.init) ?? "?"), the most the completion may charge")
        }
        return .complete(amount: amount)
    }
}
