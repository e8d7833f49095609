import Crypto
import Foundation
import JSON
import Pipeline

/// An event about the webhook machinery itself, for operators and backends, published on `paypipe.results` next
/// to the payment results (routing key = type, so `payment.#` bindings do not receive them): never sent to a
/// merchant's webhook. Same envelope as ``PaymentEvent`` (`{"type","timestamp","data"}`, `data.id` = AMQP
/// `message_id`, stable so consumers dedupe). Schema: `docs/schemas/operational-event.schema.json`.
public struct OperationalEvent: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        /// An endpoint failed continuously for `PAYPIPE_WEBHOOK_DISABLE_AFTER` and was disabled; its deliveries are
        /// held until `paypipe webhooks endpoints enable`.
        case endpointDisabled = "endpoint.disabled"
        /// A delivery ran out of attempts (`retries_exhausted`): the merchant never got this payment's webhook.
        case webhookExhausted = "webhook.exhausted"
    }

    public var kind: Kind
    public var id: String
    public var occurredAt: Date
    /// The members of `data` after `id`, in order.
    public var fields: [(key: String, value: JSONValue)]

    public static func == (lhs: OperationalEvent, rhs: OperationalEvent) -> Bool {
        lhs.body == rhs.body
    }

    /// `endpoint.disabled`: the id derives from the endpoint and the moment it was disabled, so a re-publication of
    /// the same disabling dedupes and a later one (after a re-enable) does not.
    public static func endpointDisabled(_ endpoint: WebhookEndpoint, health: EndpointHealth) -> OperationalEvent {
        let disabledAt = health.disabledAt ?? Date(timeIntervalSince1970: 0)
        var fields: [(key: String, value: JSONValue)] = [
            ("merchantId", .string(endpoint.merchantId)),
            ("url", .string(redacted(endpoint.url))),
            ("endpoint", .string(NotifyStage.endpointKey(endpoint.url))),
            ("reason", .string(health.disabledReason ?? EndpointHealthPolicy.failingReason)),
        ]
        if let since = health.failingSince { fields.append(("failingSince", .string(PaymentEvent.timestamp(since)))) }
        fields.append(("disabledAt", .string(PaymentEvent.timestamp(disabledAt))))
        if let error = health.lastError { fields.append(("lastError", .string(error))) }
        return OperationalEvent(
            kind: .endpointDisabled, id: id("endpoint-disabled:\(endpoint.merchantId):\(endpoint.url):\(micros(disabledAt))"),
            occurredAt: disabledAt, fields: fields)
    }

    /// `webhook.exhausted` for the payment event whose delivery gave up after `attempts` attempts; the id derives
    /// from the event and the time, so the exhaustion of a later replay is a new event.
    public static func webhookExhausted(_ event: PaymentEvent, url: String, attempts: Int, lastError: String, at: Date) -> OperationalEvent {
        webhookExhausted(NotifyEvent(event), url: url, attempts: attempts, lastError: lastError, at: at)
    }

    /// `webhook.exhausted` for any event notify delivers (a payment's result, an operation's event).
    public static func webhookExhausted(_ event: NotifyEvent, url: String, attempts: Int, lastError: String, at: Date) -> OperationalEvent {
        OperationalEvent(
            kind: .webhookExhausted, id: id("webhook-exhausted:\(event.id):\(micros(at))"), occurredAt: at,
            fields: [
                ("merchantId", .string(event.merchantId)),
                ("paymentId", .string(event.paymentId.paymentIDText)),
                ("jobId", .string(event.jobId)),
                ("eventId", .string(event.id)),
                ("eventType", .string(event.type)),
                ("url", .string(redacted(url))),
                ("endpoint", .string(NotifyStage.endpointKey(url))),
                ("attempts", .integer(Int64(attempts))),
                ("lastError", .string(lastError)),
            ])
    }

    public var json: JSONValue {
        .object([
            ("type", .string(kind.rawValue)), ("timestamp", .string(PaymentEvent.timestamp(occurredAt))),
            ("data", .object([("id", .string(id))] + fields)),
        ])
    }

    public var body: [UInt8] { json.serialized() }

    /// The message on `paypipe.results`, shaped like ``NotifyEvent/resultMessage``, with the ids it has as
    /// `correlation_id` and headers (``subject``), but no merchant routing key (`payment.*.<merchantId>` readers get
    /// payment events only).
    public var message: OutboundMessage {
        subject.resultsMessage(id: id, type: kind.rawValue, body: body, timestamp: occurredAt)
    }

    /// The URL as events and listings show it: no user info, query or fragment (where endpoints carry tokens).
    public static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.host != nil else { return NotifyStage.endpointKey(url) }
        components.user = nil
        components.password = nil
        components.query = nil
        components.fragment = nil
        return components.string ?? NotifyStage.endpointKey(url)
    }

    private static func micros(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    private static func id(_ seed: String) -> String {
        "evt_" + Hex.encode(Array(SHA256.hash(Array("paypipe-\(seed)".utf8)).prefix(16)))
    }
}
