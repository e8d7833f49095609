import Foundation
import Pipeline
import Postgres

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

    /// The event on `paypipe.results`: routing key = type, persistent, `message_id` = event id (consumers dedupe on
    /// it like on `webhook-id`), `correlation_id` = the job's id (the operation's for an operation event). Not mandatory:
    /// a results exchange nobody binds to is a valid deployment.
    public var resultMessage: OutboundMessage {
        resultSubject.resultsMessage(id: id, type: type, body: body, timestamp: occurredAt, merchantId: merchantId)
    }

    public init(_ event: PaymentEvent) {
        subject = .payment(event.paymentId, deliveredStatus: event.status)
        (id, type, body, occurredAt) = (event.id, event.type.rawValue, event.body, event.occurredAt)
        (paymentId, merchantId, jobId) = (event.paymentId, event.merchantId, event.jobId)
        resultSubject = event.subject
    }
}

/// The events of one kind of row a notify hand-off names besides its payment: an operation's
/// (``OperationEventMessage``) or a credential's (``CredentialEventHandOff``). Each kind lives with what records its
/// rows (`OperationEvents` in Operations/, `CredentialEvents` in MerchantTokens/): how the row is read, what its
/// event says, and what settling its webhook marks. Notify's one delivery path sees only the ``NotifyRead`` and
/// the ``NotifyEvent``, so a new kind of event adds a conformer (and its cases here and in ``NotifyEventReader``),
/// never a second path.
public protocol NotifyRowEvents: Sendable {
    /// One row's read, in the batch's transaction: `nil` for no such row, or one without a payment to deliver for.
    func read(_ rowId: Int64, on connection: PostgresConnection) throws -> NotifyRead?
    /// The row's webhook settled: stamps it notified, so a repeated hand-off sends nothing.
    func settle(_ rowId: Int64, on connection: PostgresConnection) throws
}

/// Which event a notify message asks for: its payment's result, an operation's event (``OperationEventMessage``) or a
/// credential's (``CredentialEventHandOff``).
/// The key of the duplicate rule before anything is read.
public enum NotifyRequest: Sendable, Hashable {
    case payment(UUID)
    case operation(Int64)
    case credential(Int64)
}

/// A decoded notify delivery: the hand-off plus what the stage needs of the delivered message itself — how many retry
/// tiers it has been through (`x-paypipe-retries`, to number attempts and spot the last one) and the message, to
/// dead-letter it in the runtime's format when the webhook retries run out.
public struct NotifyMessage: Sendable, Equatable {
    public let message: StageMessage
    public let inbound: InboundMessage
    /// A finished operation's hand-off (``OperationEventMessage``): its event is sent, not the payment's.
    public let operation: Int64?
    /// A credential event's hand-off (``CredentialEventHandOff``): that event is sent, not the payment's.
    public let credentialEvent: Int64?

    public var previousRetries: Int { inbound.previousRetries }

    /// The event it asks for: an operation's or a credential's, else its payment's result.
    public var request: NotifyRequest {
        operation.map(NotifyRequest.operation) ?? credentialEvent.map(NotifyRequest.credential) ?? .payment(message.paymentId)
    }

    /// Names an event of its own (an operation's, a credential's) rather than the payment's result.
    var namesEvent: Bool { operation != nil || credentialEvent != nil }

    public init(message: StageMessage, inbound: InboundMessage, operation: Int64? = nil, credentialEvent: Int64? = nil) {
        self.message = message
        self.inbound = inbound
        self.operation = operation
        self.credentialEvent = operation == nil ? credentialEvent : nil
    }

    /// A delivered hand-off: the job's message, and the operation's or credential event's row id when it names one.
    public init(decoding inbound: InboundMessage) throws(StageFailure) {
        self.init(message: try StageMessage.decode(inbound.body), inbound: inbound, operation: OperationEventMessage.operation(in: inbound.body),
                  credentialEvent: CredentialEventHandOff.rowId(in: inbound.body))
    }

    /// The delivery span's attributes: the job message's, plus the operation's or credential event's row id.
    public var spanAttributes: [SpanAttribute] {
        message.spanAttributes + (operation.map { [SpanAttribute("operation", String($0))] } ?? [])
            + (credentialEvent.map { [SpanAttribute("credentialEvent", String($0))] } ?? [])
    }

    /// What it asks about, as failure reasons name it: `operation 7`, `credential event 3` or `payment <id>`.
    var subjectName: String {
        operation.map { "operation \($0)" } ?? credentialEvent.map { "credential event \($0)" } ?? "payment \(message.paymentId)"
    }
}


/// What a message on `paypipe.results` is about, carried outside its body so a backend can wait for one job's result
/// or select one merchant's without parsing JSON (docs/job-contract.md "Receiving results"): the AMQP
/// `correlation_id` and the string headers `merchantId`, `jobId`, `paymentId`, `operationId`, `credentialId` (each when known) and
/// `type` (always, set by ``resultsMessage(id:type:body:timestamp:merchantId:)``).
public struct ResultSubject: Sendable, Equatable {
    public var merchantId: String?
    public var jobId: String?
    public var paymentId: String?
    /// Set for an operation's event: its `operationId`, which is then the correlation id.
    public var operationId: String?
    /// Set for a credential's event (``CredentialEvent``): the credential's id, which is then the correlation id.
    public var credentialId: String?

    public init(merchantId: String? = nil, jobId: String? = nil, paymentId: String? = nil, operationId: String? = nil, credentialId: String? = nil) {
        self.merchantId = merchantId
        self.jobId = jobId
        self.paymentId = paymentId
        self.operationId = operationId
        self.credentialId = credentialId
    }

    /// The id the publisher chose for what it asked: the operation's for an operation event, the credential's for a
    /// credential event, else the job's.
    public var correlationId: String? { operationId ?? credentialId ?? jobId }

    /// The AMQP headers it contributes, besides `type`.
    var headers: [String: String] {
        var headers: [String: String] = [:]
        headers["merchantId"] = merchantId
        headers["jobId"] = jobId
        headers["paymentId"] = paymentId
        headers["operationId"] = operationId
        headers["credentialId"] = credentialId
        return headers
    }

    /// Any event on `paypipe.results` about it (payment results and ``OperationalEvent``s): routing key and AMQP
    /// `type` = the event type, `message_id` = the event id, persistent, not mandatory. A merchant's event is also
    /// routed by `<type>.<merchantId>` (``PipelineTopology/merchantResultsKey(type:merchantId:)``), for readers bound to
    /// their merchants only. It gives the `correlation_id` and the headers; the `type` header is always set, and
    /// `merchantId` falls back to the routing merchant.
    public func resultsMessage(id: String, type: String, body: [UInt8], timestamp: Date, merchantId: String? = nil) -> OutboundMessage {
        var headers = self.headers
        headers["type"] = type
        if headers["merchantId"] == nil { headers["merchantId"] = merchantId }
        return .event(exchange: ResultsExchange.name, type: type, id: id, body: body, timestamp: timestamp,
                      alsoRoutedAs: merchantId.map { [ResultsExchange.merchantKey(type: type, merchantId: $0)] } ?? [],
                      correlationId: correlationId, headers: headers)
    }
}

extension PaymentEvent {
    /// The job's payment: correlated by the job's id.
    public var subject: ResultSubject {
        ResultSubject(merchantId: merchantId, jobId: jobId, paymentId: paymentId.paymentIDText)
    }
}

extension OperationalEvent {
    /// Whatever of the ids its data carries (`webhook.exhausted`: all of a payment's; `endpoint.disabled`: the merchant).
    public var subject: ResultSubject {
        func field(_ name: String) -> String? { fields.first { $0.key == name }?.value.stringValue }
        return ResultSubject(merchantId: field("merchantId"), jobId: field("jobId"), paymentId: field("paymentId"))
    }
}
