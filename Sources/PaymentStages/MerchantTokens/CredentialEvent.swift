import Foundation
import JSON
import Pipeline
import Postgres

/// A stored credential's event for its merchant (`credential.unlinked`, `credential.updated`), sent like a
/// payment's result through notify's one delivery path (signed webhook, `paypipe.results`; schema
/// `docs/schemas/event.schema.json`). Recorded with the change by ``Pipeline/CredentialStore`` (outbox
/// `credential_events`), handed to notify by ``CredentialEventRelay``. Its payment is the one that stored the
/// credential: its `notify_url` wins over the merchant's webhook, as for that payment's operations.
public struct CredentialEvent: Sendable, Equatable {
    public let event: CredentialEventStore.Event
    /// The customer-initiated payment that stored the credential.
    public let payment: PaymentRecord

    public init(event: CredentialEventStore.Event, payment: PaymentRecord) {
        self.event = event
        self.payment = payment
    }

    public var id: String { event.eventId }
    public var type: String { event.type.rawValue }

    public var json: JSONValue {
        var data: [(key: String, value: JSONValue)] = [
            ("id", .string(event.eventId)), ("merchantId", .string(event.merchantId)), ("credentialId", .string(event.credentialId)),
            ("credential", event.credential), ("paymentId", .string(payment.id.paymentIDText)), ("jobId", .string(payment.jobId)),
        ]
        if let reason = event.reason { data.append(("reason", .string(reason))) }
        data.append(("occurredAt", .string(PaymentEvent.timestamp(event.occurredAt))))
        return .object([("type", .string(type)), ("timestamp", .string(PaymentEvent.timestamp(event.occurredAt))), ("data", .object(data))])
    }

    public var body: [UInt8] { json.serialized() }

    /// Correlated by the credential's id; `jobId` and `paymentId` are those of the payment that stored it.
    public var subject: ResultSubject {
        ResultSubject(merchantId: event.merchantId, jobId: payment.jobId, paymentId: payment.id.paymentIDText, credentialId: event.credentialId)
    }
}

extension NotifyEvent {
    /// A credential's event: settling it stamps the event `notified_at`.
    public init(_ event: CredentialEvent) {
        subject = .credential(event.event.rowId)
        (id, type, body, occurredAt) = (event.id, event.type, event.body, event.event.occurredAt)
        (paymentId, merchantId, jobId) = (event.payment.id, event.event.merchantId, event.payment.jobId)
        resultSubject = event.subject
    }
}

/// Credential events as notify reads and settles them (``NotifyRowEvents``): the hand-off
/// (``CredentialEventHandOff``) names a `credential_events` row.
struct CredentialEvents: NotifyRowEvents {
    /// A recorded credential event: it, the payment that stored the credential and that payment's `notify_url`, and
    /// whether the event was notified or attempted before.
    func read(_ rowId: Int64, on connection: PostgresConnection) throws -> NotifyRead? {
        guard let recorded = try CredentialEventStore().load(rowId, on: connection),
              let payment = try PaymentStore().load(recorded.paymentId, on: connection) else { return nil }
        let row = try connection.query(
            """
            SELECT p.notify_url, EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.payment_id = p.id AND d.event_id = $2) AS attempted
            FROM payments p WHERE p.id = $1
            """, [payment.id, recorded.eventId])[0]
        return NotifyRead(
            payment: payment, merchantId: recorded.merchantId, event: NotifyEvent(CredentialEvent(event: recorded, payment: payment)),
            notifyURL: try row.decode("notify_url", as: String?.self), settled: recorded.notified,
            attempted: try row.decode("attempted", as: Bool.self), pending: "credential event \(rowId) is recorded")
    }

    func settle(_ rowId: Int64, on connection: PostgresConnection) throws {
        try CredentialEventStore().markNotified(rowId, on: connection)
    }
}

/// The hand-off of a recorded credential event to `notify`: a payment's hand-off (the storing payment) with one more
/// member, `"credentialEvent"` (the `credential_events` row id), on the stages exchange with routing key `notify`.
public enum CredentialEventHandOff {
    public static let member = "credentialEvent"

    /// The hand-off as the relay publishes it: persistent, mandatory, `message_id` `credential-event:<row id>:notify`.
    public static func handOff(_ handOff: CredentialEventStore.HandOff) -> HandOffMessage {
        let body = JSONValue.object([
            (member, .integer(handOff.rowId)), ("jobId", .string(handOff.jobId)), ("merchantId", .string(handOff.merchantId)),
            ("paymentId", .string(handOff.paymentId.paymentIDText)),
        ]).serialized()
        return HandOffMessage(to: Stage.notify.name, id: "credential-event:\(handOff.rowId):notify", body: body)
    }

    /// The credential event row id a hand-off names, nil for any other hand-off.
    public static func rowId(in bytes: [UInt8]) -> Int64? {
        guard let object = try? JSONValue.parse(bytes, maxDepth: 4), let id = object[member]?.int64Value, id > 0 else { return nil }
        return id
    }
}
