import Crypto
import Foundation
import JSON
import Pipeline

/// One terminal payment result, as sent to the merchant (webhook body) and to `paypipe.results`.
///
/// The envelope follows Standard Webhooks (`{"type","timestamp","data"}`); ``body`` is serialised with the ordered
/// ``JSONValue`` so the same event always gives the same bytes, and it is serialised **once** per attempt: the
/// signature covers exactly the bytes sent. Schema: `docs/schemas/event.schema.json`.
///
/// Only a card *summary* ever leaves PayPipe (network and the last four digits of the device account number),
/// and only while the card data is still stored; optional parts (gateway result, card, error) are omitted rather
/// than sent as `null`, because the submit stage may not have recorded them.
public struct PaymentEvent: Sendable, Equatable {
    public struct Amount: Sendable, Equatable {
        public var value: Int64
        public var currency: String
        public init(value: Int64, currency: String) {
            self.value = value
            self.currency = currency
        }
    }

    /// The event's summary of the gateway's answer (like ``CardSummary``; the processor's own answer is
    /// `GatewayResult`), from the latest `gateway_attempts` row. Every field is optional: attempts are written by the
    /// submit stage and may be incomplete (uncertain, not sent).
    public struct GatewaySummary: Sendable, Equatable {
        public var transactionReference: String?
        public var errorCode: String?
        public var errorMessage: String?
        public var settleStatus: String?
        public var authCode: String?
        public init(transactionReference: String?, errorCode: String?, errorMessage: String?, settleStatus: String?, authCode: String?) {
            self.transactionReference = transactionReference
            self.errorCode = errorCode
            self.errorMessage = errorMessage
            self.settleStatus = settleStatus
            self.authCode = authCode
        }
    }

    public struct CardSummary: Sendable, Equatable {
        public var network: String?
        public var last4: String
        public init(network: String?, last4: String) {
            self.network = network
            self.last4 = last4
        }
    }

    public var type: PaymentEventType
    public var paymentId: UUID
    public var jobId: String
    public var merchantId: String
    public var orderReference: String?
    public var amount: Amount?
    public var gateway: GatewaySummary?
    public var card: CardSummary?
    public var errorCode: String?
    public var errorReason: String?
    /// The job's `metadata` object, passed through untouched (the backend's own correlation data).
    public var metadata: JSONValue
    public var receivedAt: Date
    /// When the payment reached its terminal status: the Standard Webhooks `timestamp` (when the event happened).
    public var occurredAt: Date
    /// `merchant` (Apple's merchant token, MPAN), `device` (DPAN) or `unknown`; absent for payments recorded before
    /// PayPipe recorded it, or that failed before their token was read.
    public var tokenType: TokenType? = nil
    /// `payment.authorized` of a storing payment (CIT): the credential it stored (docs/recurring.md); nothing secret.
    public var credential: StoredCredentialSummary? = nil

    /// What an event says of a stored credential: no reference, no card number.
    public struct StoredCredentialSummary: Sendable, Equatable {
        public var id: String
        public var usage: CredentialUsage
        public var tokenType: TokenType
        public var network: String?
        public var last4: String?
        /// `YYYY-MM`.
        public var expiry: String?

        public init(id: String, usage: CredentialUsage, tokenType: TokenType, network: String?, last4: String?, expiry: String?) {
            (self.id, self.usage, self.tokenType, self.network, self.last4, self.expiry) = (id, usage, tokenType, network, last4, expiry)
        }

        var json: JSONValue {
            let optional: [(String, String?)] = [("network", network), ("last4", last4), ("expiry", expiry)]
            return .object([("id", .string(id)), ("usage", .string(usage.rawValue)), ("tokenType", .string(tokenType.rawValue))]
                + optional.compactMap { key, value in value.map { (key, JSONValue.string($0)) } })
        }
    }

    public init(
        type: PaymentEventType, paymentId: UUID, jobId: String, merchantId: String, orderReference: String?,
        amount: Amount?, gateway: GatewaySummary?, card: CardSummary?, errorCode: String?, errorReason: String?,
        metadata: JSONValue, receivedAt: Date, occurredAt: Date
    ) {
        self.type = type
        self.paymentId = paymentId
        self.jobId = jobId
        self.merchantId = merchantId
        self.orderReference = orderReference
        self.amount = amount
        self.gateway = gateway
        self.card = card
        self.errorCode = errorCode
        self.errorReason = errorReason
        self.metadata = metadata
        self.receivedAt = receivedAt
        self.occurredAt = occurredAt
    }

    /// The status in the payload (`authorized`, `needs_review`, …).
    public var status: String { String(type.rawValue.dropFirst("payment.".count)) }

    /// Stable across redeliveries and replays, so receivers can dedupe on `webhook-id`: derived from the payment id
    /// and the terminal status (a payment has at most one terminal status). `evt_` + 32 hex digits; never contains
    /// `.` (the spec forbids it in ids, which are part of the signed content).
    public var id: String { Self.id(paymentId: paymentId, type: type) }

    public static func id(paymentId: UUID, type: PaymentEventType) -> String {
        let digest = SHA256.hash(Array("paypipe-event:\(paymentId.paymentIDText):\(type.rawValue)".utf8))
        return "evt_" + Hex.encode(digest[..<16])
    }

    /// The envelope as an ordered JSON value.
    public var json: JSONValue {
        var data: [(key: String, value: JSONValue)] = [
            ("id", .string(id)),
            ("paymentId", .string(paymentId.paymentIDText)),
            ("jobId", .string(jobId)),
            ("merchantId", .string(merchantId)),
        ]
        if let orderReference { data.append(("orderReference", .string(orderReference))) }
        if let amount {
            data.append(("amount", .object([("value", .integer(amount.value)), ("currency", .string(amount.currency))])))
        }
        data.append(("status", .string(status)))
        if let tokenType { data.append(("tokenType", .string(tokenType.rawValue))) }
        if let credential { data.append(("credential", credential.json)) }
        if let gateway {
            let fields: [(String, String?)] = [
                ("transactionReference", gateway.transactionReference), ("errorCode", gateway.errorCode),
                ("errorMessage", gateway.errorMessage), ("settleStatus", gateway.settleStatus), ("authCode", gateway.authCode),
            ]
            data.append(("gateway", .object(fields.compactMap { key, value in value.map { (key, JSONValue.string($0)) } })))
        }
        if let card {
            var fields: [(key: String, value: JSONValue)] = []
            if let network = card.network { fields.append(("network", .string(network))) }
            fields.append(("last4", .string(card.last4)))
            data.append(("card", .object(fields)))
        }
        if let errorCode {
            var error: [(key: String, value: JSONValue)] = [("code", .string(errorCode))]
            if let errorReason { error.append(("reason", .string(errorReason))) }
            data.append(("error", .object(error)))
        }
        data.append(("metadata", metadata))
        data.append(("receivedAt", .string(Self.timestamp(receivedAt))))
        data.append(("completedAt", .string(Self.timestamp(occurredAt))))
        return .object([("type", .string(type.rawValue)), ("timestamp", .string(Self.timestamp(occurredAt))), ("data", .object(data))])
    }

    /// The serialised envelope: the exact webhook body and `paypipe.results` message body.
    public var body: [UInt8] { json.serialized() }

    /// ISO 8601 in UTC with milliseconds, e.g. `2026-01-01T00:00:00.000Z`.
    public static func timestamp(_ date: Date) -> String {
        Logger.timestamp(date)
    }
}

/// The event types sent to merchants about a payment's status: one per terminal status (American spelling, matching
/// `payments.status`), and `payment.awaiting_amount` when a deferred payment starts waiting for its amount (not an
/// outcome: its terminal event follows). The raw value is both the Standard Webhooks `type` and the routing key on
/// `paypipe.results`, so consumers can bind to `payment.#` or to a single outcome.
public enum PaymentEventType: String, Sendable, CaseIterable, Codable {
    case authorized = "payment.authorized"
    case declined = "payment.declined"
    case failed = "payment.failed"
    case needsReview = "payment.needs_review"
    /// A deferred payment (its job had `amountPending`) waits for a `payment.complete.requested` operation.
    case awaitingAmount = "payment.awaiting_amount"

    /// The event for a terminal status or `awaiting_amount`; `nil` for another status (nothing to notify yet).
    public init?(status: PaymentStatus) {
        switch status {
        case .authorized: self = .authorized
        case .declined: self = .declined
        case .failed: self = .failed
        case .needsReview: self = .needsReview
        case .awaitingAmount: self = .awaitingAmount
        case .received, .decrypted, .prepared, .submitting: return nil
        }
    }
}
