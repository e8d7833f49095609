import Foundation
import Pipeline

/// One event notify delivers, whatever it is about: a payment's result (``PaymentEvent``), one of its operations'
/// events (``OperationEvent``) or an event of the credential it stored (``CredentialEvent``). The stage's one delivery path — target, secret rules, SSRF guard, endpoint gate,
/// disabling, endpoint health, retry schedule and results publication — sees only this; the ``Subject`` says what
/// settling the webhook marks (the payment done, or the operation notified).
public struct NotifyEvent: Sendable, Equatable {
    /// What the event is about, and the unit of the duplicate rule (one webhook per subject per batch).
    public enum Subject: Sendable, Hashable {
        /// A payment's result: settling marks the payment `done`, while it still has `deliveredStatus`.
        case payment(UUID, deliveredStatus: String)
        /// A finished operation's event (`payment_operations` row id): settling stamps the operation `notified_at`.
        case operation(Int64)
        /// A credential's event (`credential_events` row id): settling stamps the event `notified_at`.
        case credential(Int64)
    }

    public let subject: Subject
    /// Stable per event (`webhook-id`, `message_id`).
    public let id: String
    public let type: String
    /// Serialised once: the exact bytes signed, POSTed and published to `paypipe.results`.
    public let body: [UInt8]
    public let occurredAt: Date
    public let paymentId: UUID
    public let merchantId: String
    public let jobId: String
    /// The ids its results message carries as `correlation_id` and headers.
    public let resultSubject: ResultSubject

    public init(_ event: PaymentEvent) {
        subject = .payment(event.paymentId, deliveredStatus: event.status)
        (id, type, body, occurredAt) = (event.id, event.type.rawValue, event.body, event.occurredAt)
        (paymentId, merchantId, jobId) = (event.paymentId, event.merchantId, event.jobId)
        resultSubject = event.subject
    }

    public init(_ event: OperationEvent) {
        subject = .operation(event.operation.id)
        (id, type, body, occurredAt) = (event.id, event.type, event.body, event.occurredAt)
        (paymentId, merchantId, jobId) = (event.payment.id, event.payment.merchantId, event.payment.jobId)
        resultSubject = event.subject
    }

    public init(_ event: CredentialEvent) {
        subject = .credential(event.event.rowId)
        (id, type, body, occurredAt) = (event.id, event.type, event.body, event.event.occurredAt)
        (paymentId, merchantId, jobId) = (event.payment.id, event.event.merchantId, event.payment.jobId)
        resultSubject = event.subject
    }
}

/// Which event a notify message asks for: its payment's result, an operation's event (``OperationEventMessage``) or a
/// credential's (``CredentialEventHandOff``).
/// The key of the duplicate rule before anything is read.
public enum NotifyRequest: Sendable, Hashable {
    case payment(UUID)
    case operation(Int64)
    case credential(Int64)
}
