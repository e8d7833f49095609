import Foundation
import JSON
import Pipeline
import Postgres

/// What notify reads for one request at the start of a batch, as its decisions see it.
public struct NotifyRead: Sendable {
    public let payment: PaymentRecord
    /// The merchant the request belongs to (an operation's own, which its hand-off must name).
    public let merchantId: String
    /// `nil` while there is nothing to notify yet (the payment not terminal, the operation not finished).
    public let event: NotifyEvent?
    /// The job's `notify_url`.
    public let notifyURL: String?
    /// The webhook of this event was settled before: the payment is `done`, the operation `notified_at` is set.
    public let settled: Bool
    /// A webhook attempt of this event is recorded: notify decided on it before.
    public let attempted: Bool
    /// What the subject is while not final, for the `payment_not_terminal` reason.
    public let pending: String
}

/// The notify stage's batch read: every payment result of the batch in one query (``PaymentEventLoader``), and each
/// operation's or credential's event as its kind reads it (``NotifyRowEvents``: one row at a time, as they are rare
/// next to payments). An id without a row is absent; a row that does not decode fails only its own request.
/// It also reads where each event goes (``target(for:notifyURL:on:)``: the merchant's webhook and secrets), and
/// settles what was delivered (``settle(_:on:)``).
struct NotifyEventReader: Sendable {
    private let payments = PaymentEventLoader()
    /// The events a hand-off names by row, each kind with what records its rows.
    private let operations: any NotifyRowEvents = OperationEvents()
    private let credentials: any NotifyRowEvents = CredentialEvents()
    let directory: MerchantDirectory

    /// Where and how to deliver one event.
    struct Target {
        let url: String
        let secrets: [String]
        /// The URL came from the merchant's configuration (a 410 disables it), not from the job's `notify_url`.
        let isMerchantWebhook: Bool
        /// The merchant's `webhook.ratePerSecond`.
        let ratePerSecond: Double?
    }

    /// The job's `notify_url` wins; else the merchant's webhook while enabled; else nothing to deliver.
    func target(for payment: PaymentRecord, notifyURL: String?, on database: PostgresConnection) throws -> Target? {
        let merchant = try directory.entry(payment.merchantId, on: database)?.merchant
        let secrets = merchant?.secrets.webhookSecrets ?? []
        if let notifyURL, !notifyURL.isEmpty {
            return Target(url: notifyURL, secrets: secrets, isMerchantWebhook: false, ratePerSecond: merchant?.config.webhook?.ratePerSecond)
        }
        guard let webhook = merchant?.config.webhook, webhook.enabled, !webhook.url.isEmpty else { return nil }
        return Target(url: webhook.url, secrets: secrets, isMerchantWebhook: true, ratePerSecond: webhook.ratePerSecond)
    }

    /// Each message's read, in order: `nil` for an unknown id, and for an operation's or credential event's hand-off
    /// naming another merchant (it names its merchant: another merchant's event is unknown to it).
    func read(_ batch: [NotifyMessage], on connection: PostgresConnection) throws -> [Result<NotifyRead?, any Error>] {
        let loaded = try read(batch.map(\.request), on: connection)
        return batch.map { message in
            guard let read = loaded[message.request] else { return .success(nil) }
            return read.map { read in message.namesEvent && read.merchantId != message.message.merchantId ? nil : read }
        }
    }

    func read(_ requests: [NotifyRequest], on connection: PostgresConnection) throws -> [NotifyRequest: Result<NotifyRead, any Error>] {
        var reads: [NotifyRequest: Result<NotifyRead, any Error>] = [:]
        let paymentIds = requests.compactMap { request -> UUID? in
            if case .payment(let id) = request { return id }
            return nil
        }
        for (id, loaded) in try payments.load(paymentIds, on: connection) {
            reads[.payment(id)] = loaded.map { loaded in
                let payment = loaded.payment
                return NotifyRead(
                    payment: payment, merchantId: payment.merchantId, event: loaded.loaded.map { NotifyEvent($0.event) },
                    notifyURL: loaded.loaded?.notifyURL, settled: payment.stage == .done, attempted: loaded.loaded?.attempted ?? false,
                    pending: "payment \(payment.id) is \(payment.status.rawValue)")
            }
        }
        for request in Set(requests) {
            guard let (kind, rowId) = row(request) else { continue }
            do {
                if let read = try kind.read(rowId, on: connection) { reads[request] = .success(read) }
            } catch {
                reads[request] = .failure(error)
            }
        }
        return reads
    }

    /// The kind and row id of a request that names a row; `nil` for a payment's result.
    private func row(_ request: NotifyRequest) -> (kind: any NotifyRowEvents, rowId: Int64)? {
        switch request {
        case .payment: nil
        case .operation(let rowId): (operations, rowId)
        case .credential(let rowId): (credentials, rowId)
        }
    }

    /// Settles an event's webhook: the payment marked done while it still has the delivered status; an operation's or a
    /// credential's event as its kind settles it (``NotifyRowEvents/settle(_:on:)``: stamped notified).
    func settle(_ event: NotifyEvent, on connection: PostgresConnection) throws {
        switch event.subject {
        case .payment(let paymentId, let deliveredStatus): try PaymentStore().markDone(paymentId, deliveredStatus: deliveredStatus, on: connection)
        case .operation(let rowId): try operations.settle(rowId, on: connection)
        case .credential(let rowId): try credentials.settle(rowId, on: connection)
        }
    }
}

/// Builds a payment's ``PaymentEvent`` from the database: the payment row, its latest gateway attempt and the time
/// it reached its terminal status.
///
/// Reads defensively: gateway attempts are written by the submit stage and every column but the state may be
/// empty; a payment that failed before submit has no attempt at all. Card data is never read: it is crypto-shredded
/// in the transaction that makes the payment terminal, before there is anything to notify, so the card summary comes
/// from the gateway's masked PAN or is absent rather than a guess.
public struct PaymentEventLoader: Sendable {
    public init() {}

    /// The event and the job-level webhook URL override (`payments.notify_url`), read together.
    public struct Loaded: Sendable {
        public let event: PaymentEvent
        public let notifyURL: String?
        /// Whether a webhook attempt of this very event is recorded: notify has decided on it before (what
        /// ``NotifyDecision/publishesResults(_:webhookSettled:)`` goes by).
        public let attempted: Bool
    }

    /// `nil` if the payment is not terminal (there is nothing to notify yet). One query (one round trip) reads the
    /// payment's extra columns, its terminal time and its latest gateway attempt.
    public func load(_ payment: PaymentRecord, on connection: PostgresConnection) throws -> Loaded? {
        guard PaymentEventType(status: payment.status) != nil else { return nil }
        let rows = try connection.query(Self.query(where: "id = $1"), [payment.id])
        return try loaded(payment, row: rows.first)
    }

    /// A whole batch in one query (one statement instead of two per payment): each payment row with everything its
    /// event needs, keyed by payment id; ids without a payment are absent. Each payment is decoded on its own, so a
    /// row that does not decode fails only its own entry, as it would have failed only its own message one by one.
    public func load(_ paymentIds: [UUID], on connection: PostgresConnection) throws -> [UUID: Result<LoadedPayment, any Error>] {
        guard !paymentIds.isEmpty else { return [:] }
        let rows = try connection.query(Self.query(where: "id = ANY($1::uuid[])"), [PostgresArray(Array(Set(paymentIds)))])
        var loaded: [UUID: Result<LoadedPayment, any Error>] = [:]
        for row in rows {
            let id = try row.decode("id", as: UUID.self)
            loaded[id] = Result {
                let payment = try PaymentRecord(row: row)
                return LoadedPayment(payment: payment, loaded: try self.loaded(payment, row: row))
            }
        }
        return loaded
    }

    /// The query both loads share, for the payments matching `condition` (on `payments`): the payment's columns
    /// (``Pipeline/PaymentRecord/columns``, `metadata` as text, `notify_url`), its terminal time, its latest gateway
    /// attempt (error columns prefixed `gateway_`, as the payment has its own).
    private static func query(where condition: String) -> String {
        """
        SELECT p.*,
               (SELECT max(at) FROM payment_events WHERE payment_id = p.id AND to_status = p.status) AS terminal_at,
               (SELECT string_agg(DISTINCT event_id, ',') FROM webhook_deliveries WHERE payment_id = p.id) AS attempted_events,
               g.id AS attempt_id, g.transaction_reference, g.error_code AS gateway_error_code,
               g.error_message AS gateway_error_message, g.settle_status, g.auth_code, g.masked_pan,
               cr.id AS credential_id, cr.usage AS credential_usage, cr.token_type AS credential_token_type,
               cr.network AS credential_network, cr.last4 AS credential_last4, cr.expiry AS credential_expiry
        FROM (SELECT \(PaymentRecord.columns), metadata::text AS metadata, notify_url, token_type FROM payments WHERE \(condition)) p
        -- The credential a storing payment recorded (at most one: payment_id is unique).
        LEFT JOIN credentials cr ON cr.payment_id = p.id
        -- The completed attempt wins over later uncertain/not-sent ones; among equals the newest.
        LEFT JOIN LATERAL (SELECT id, transaction_reference, error_code, error_message, settle_status, auth_code, masked_pan
                           FROM gateway_attempts WHERE payment_id = p.id
                           ORDER BY (state = 'completed') DESC, id DESC LIMIT 1) g ON true
        """
    }

    /// Row → event, shared by both loads. `row` is `nil` when the payment vanished between its load and this one
    /// (the event is then built from `payment` alone); `nil` if the payment is not terminal.
    private func loaded(_ payment: PaymentRecord, row: PostgresRow?) throws -> Loaded? {
        guard let type = PaymentEventType(status: payment.status) else { return nil }
        let metadataText = try row?.decode("metadata", as: String?.self) ?? "{}"
        let metadata = (try? JSONValue.parse(metadataText)) ?? .object([])
        let gateway = try row.flatMap(Self.gatewayAttempt)
        var event = PaymentEvent(
            type: type, paymentId: payment.id, jobId: payment.jobId, merchantId: payment.merchantId,
            orderReference: payment.orderReference,
            amount: payment.amountMinor.flatMap { value in payment.currency.map { PaymentEvent.Amount(value: value, currency: $0) } },
            gateway: gateway?.result, card: Self.cardSummary(maskedPan: gateway?.maskedPan),
            errorCode: payment.errorCode, errorReason: payment.errorMessage, metadata: metadata,
            receivedAt: payment.firstReceivedAt,
            occurredAt: try row?.decode("terminal_at", as: Date?.self) ?? payment.updatedAt)
        event.tokenType = try row?.decode("token_type", as: String?.self).flatMap(TokenType.init(rawValue:))
        if type == .authorized, let row { event.credential = try Self.credential(row) }
        // Event ids are `evt_` and hex digits: a comma never occurs in one.
        let attempted = try row?.decode("attempted_events", as: String?.self)?.split(separator: ",").contains { $0 == event.id } ?? false
        return Loaded(event: event, notifyURL: try row?.decode("notify_url", as: String?.self), attempted: attempted)
    }

    private static func gatewayAttempt(_ row: PostgresRow) throws -> (result: PaymentEvent.GatewaySummary, maskedPan: String?)? {
        guard try row.decode("attempt_id", as: Int64?.self) != nil else { return nil }
        func text(_ column: String) throws -> String? {
            guard let value = try row.decode(column, as: String?.self), !value.isEmpty else { return nil }
            return value
        }
        let result = PaymentEvent.GatewaySummary(
            transactionReference: try text("transaction_reference"), errorCode: try text("gateway_error_code"),
            errorMessage: try text("gateway_error_message"), settleStatus: try text("settle_status"), authCode: try text("auth_code"))
        return (result, try text("masked_pan"))
    }

    /// The stored credential's summary, when the payment stored one.
    private static func credential(_ row: PostgresRow) throws -> PaymentEvent.StoredCredentialSummary? {
        guard let id = try row.decode("credential_id", as: String?.self),
              let usage = CredentialUsage(rawValue: try row.decode("credential_usage", as: String.self)),
              let tokenType = TokenType(rawValue: try row.decode("credential_token_type", as: String.self)) else { return nil }
        return PaymentEvent.StoredCredentialSummary(
            id: id, usage: usage, tokenType: tokenType, network: try row.decode("credential_network", as: String?.self),
            last4: try row.decode("credential_last4", as: String?.self), expiry: try row.decode("credential_expiry", as: String?.self))
    }

    /// The last four digits of the gateway's masked PAN (which masks the device account number), without network;
    /// otherwise none.
    private static func cardSummary(maskedPan: String?) -> PaymentEvent.CardSummary? {
        if let maskedPan, maskedPan.count >= 4, maskedPan.suffix(4).allSatisfy(\.isNumber) {
            return PaymentEvent.CardSummary(network: nil, last4: String(maskedPan.suffix(4)))
        }
        return nil
    }
}

/// A payment and its event as the notify stage reads them at the start of a batch (``PaymentEventLoader``): the
/// payment row decides the branch (done, not terminal, deliver), the event is what gets sent.
public struct LoadedPayment: Sendable {
    public let payment: PaymentRecord
    /// `nil` while the payment is not terminal (nothing to notify yet).
    public let loaded: PaymentEventLoader.Loaded?

    public init(payment: PaymentRecord, loaded: PaymentEventLoader.Loaded?) {
        self.payment = payment
        self.loaded = loaded
    }
}
