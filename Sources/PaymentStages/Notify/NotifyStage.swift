import AMQP
import Dispatch
import Foundation
import HTTP
import Pipeline
import Postgres
import Synchronization

/// Stage 4: a terminal payment → a signed Standard Webhooks POST to the merchant, and the same event on
/// `paypipe.results` (topic, routing key = event type).
///
/// Per message, **without** a transaction (a transaction must never be held across the HTTP call), on the payment as
/// read with the rest of its batch in one query (``PaymentEventLoader``): if its stage is already `done` the webhook
/// went out before → the results event again with the same `message_id` (its publication cannot be known to have
/// happened; consumers dedupe). Otherwise build the event, serialise it once, sign that exact body with a fresh `webhook-timestamp` and POST it (15 s, no redirects) to the
/// job's `notify_url` or the merchant's webhook URL. Every attempt is written to `webhook_deliveries`.
///
/// * 2xx → mark done, publish the results event (`.publish`, confirmed by the runtime before the ack).
/// * 410 → the merchant's webhook is disabled (`config.webhook.enabled=false`), mark done, publish.
/// * anything else → ``Pipeline/StageFailure/transient(code:reason:)``: the runtime moves the message to the next
///   retry tier (`paypipe.notify.retry.<delay>`); `Retry-After` is recorded with the attempt, and the tier schedule
///   decides the actual wait (see ``RetryAfter``).
/// * the last allowed attempt failing → the attempt is recorded `failed`, the payment is marked done, and the
///   stage returns the results event together with the runtime's own dead-letter copy (`retries_exhausted`, built by
///   ``Pipeline/DeliveryRouter``), so the DLQ and the results exchange both get exactly one message.
/// * no webhook configured, webhook disabled, no usable secret, or a target refused by the SSRF guard → no POST
///   (a `failed` record with the reason when a URL was given), mark done, publish.
///
/// Receivers must dedupe on `webhook-id` (the event id): delivery is at-least-once.
public struct NotifyStage: StageHandler {
    public let stage = Stage.notify
    private let directory: MerchantDirectory
    private let events: PaymentEventLoader
    private let urlGuard: WebhookURLGuard
    let router: DeliveryRouter
    private let httpConfiguration: HTTPClientConfiguration
    let gate: EndpointGate
    /// `paypipe_webhooks_exhausted_total` and the other notify series (NotifyStage+Metrics.swift).
    let metrics = AttachedMetrics()
    /// The worker's webhook threads, each with a keep-alive HTTP client (shared by the lanes).
    private let senders: HTTPClientPool
    private let clock: @Sendable () -> Date
    private let payments = PaymentStore()
    private let deliveries = WebhookDeliveryStore()
    /// Set-based database work per batch (one read, one write for the common case) rather than per message; `false`
    /// keeps the per-message statements, the reference semantics (equivalence tests compare the two).
    private let setBased: Bool
    /// For `webhook_secret_invalid` (the merchant id only, never the secret).
    private let logger: Logger

    public static let userAgent = "PayPipe-Webhooks/1"

    public init(
        directory: MerchantDirectory, cardData: CardDataStore, urlGuard: WebhookURLGuard, retrySchedule: RetrySchedule,
        httpConfiguration: HTTPClientConfiguration = HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 15, followRedirects: false),
        gate: EndpointGate = EndpointGate(), sendConcurrency: Int = 8, clock: @escaping @Sendable () -> Date = { Date() },
        setBased: Bool = true, logger: Logger = Logger(component: "notify", threshold: .info)
    ) {
        self.logger = logger
        self.directory = directory
        self.events = PaymentEventLoader(cardData: cardData)
        self.urlGuard = urlGuard
        self.router = DeliveryRouter(stage: .notify, retrySchedule: retrySchedule)
        var http = httpConfiguration
        http.followRedirects = false
        self.httpConfiguration = http
        self.gate = gate
        self.senders = HTTPClientPool(size: sendConcurrency, configuration: http, name: "paypipe-notify-send")
        self.clock = clock
        self.setBased = setBased
    }

    public func decode(_ delivery: AMQPDelivery) throws(StageFailure) -> NotifyMessage {
        NotifyMessage(message: try StageMessage.decode(delivery.body), previousRetries: router.previousRetries(of: delivery), delivery: delivery)
    }

    /// Three phases, so that one slow endpoint does not serialise a whole batch behind it: (1) database reads and
    /// the decisions that need no request: one query reads every payment of the batch with its event data, then the
    /// decisions run one message after the other on the lane's connection; (2) the POSTs,
    /// concurrently on the worker's sender threads (each with its keep-alive libcurl handle; ``EndpointGate`` caps the
    /// requests per endpoint); (3) recording the attempts and the outcomes in one transaction, the delivered ones in
    /// one statement (``WebhookDeliveryBatch``), the rest one by one. No transaction spans phase 2.
    public func process(_ batch: [NotifyMessage], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        var results = [Result<StageOutcome, StageFailure>?](repeating: nil, count: batch.count)
        var pending: [(index: Int, delivery: PendingDelivery)] = []
        let loaded = load(batch, database: database)
        for (index, message) in batch.enumerated() {
            do {
                switch try prepare(message, loaded: try loaded[index].get(), database: database) {
                case .decided(let outcome): results[index] = .success(outcome)
                case .deliver(let delivery): pending.append((index, delivery))
                }
            } catch {
                results[index] = .failure(FailureClassifier.classify(error))
            }
        }
        let sent = send(pending.map(\.delivery))
        // Phase 3 in one transaction (one commit for the batch, see ``BatchTransaction``): the delivered answers in
        // one statement first, everything else (and whatever that statement left) one by one.
        let answered = zip(pending, sent).map { Answered(delivery: $0.delivery, classification: $1.classification, attempt: $1.attempt) }
        let completed = BatchTransaction.run(
            answered, on: database,
            bulk: setBased ? { items, transaction in try settleDelivered(items, on: transaction) } : nil,
            fastPath: { item, transaction in try complete(item, database: transaction) },
            isolated: { item, transaction in
                do {
                    return try transaction.savepoint { try complete(item, database: $0) }
                } catch {
                    return .failure(FailureClassifier.classify(error))
                }
            },
            failed: { _, error, _ in .failure(FailureClassifier.classify(error)) })
        for (offset, item) in pending.enumerated() {
            switch completed[offset] {
            case .success(let result):
                results[item.index] = result
                if case .success = result, Self.isRetry(answered[offset].classification) { countIfExhausted(item.delivery.message) }
            case .failure(let error): results[item.index] = .failure(FailureClassifier.classify(error))
            }
        }
        return results.map { $0! }
    }

    /// Phase 1's reads, one result per message: a payment with its event data, `nil` for an unknown payment. One
    /// query for the batch (``PaymentEventLoader``); two per message when not `setBased`.
    private func load(_ batch: [NotifyMessage], database: PostgresConnection) -> [Result<LoadedPayment?, any Error>] {
        guard setBased else {
            return batch.map { message in
                Result {
                    try payments.load(message.message.paymentId, on: database).map { payment in
                        LoadedPayment(payment: payment, loaded: try events.load(payment, on: database))
                    }
                }
            }
        }
        let loaded: [UUID: Result<LoadedPayment, any Error>]
        do {
            loaded = try events.load(batch.map(\.message.paymentId), on: database)
        } catch {
            return Array(repeating: .failure(error), count: batch.count)
        }
        return batch.map { message in loaded[message.message.paymentId].map { $0.map(Optional.some) } ?? .success(nil) }
    }

    /// The bulk step of phase 3: every `.delivered` answer whose payment occurs once in the batch, recorded and marked
    /// done in one statement, with the outcome ``complete(_:database:)`` gives it; `nil` (the per-message path) for
    /// everything else — gone, retry, exhausted, a payment twice in the batch, a payment the statement did not settle.
    private func settleDelivered(_ items: [Answered], on database: PostgresConnection) throws -> [Result<StageOutcome, StageFailure>?] {
        var occurrences: [UUID: Int] = [:]
        for item in items { occurrences[item.delivery.payment.id, default: 0] += 1 }
        let candidates = items.indices.filter { index in
            guard case .delivered = items[index].classification else { return false }
            return occurrences[items[index].delivery.payment.id] == 1
        }
        let settled = try WebhookDeliveryBatch().settle(candidates.map { index in
            WebhookDeliveryBatch.Entry(attempt: Self.deliveredAttempt(items[index].attempt), event: items[index].delivery.event)
        }, on: database)
        var outcomes = [Result<StageOutcome, StageFailure>?](repeating: nil, count: items.count)
        for index in candidates where settled.contains(items[index].delivery.payment.id) {
            let delivery = items[index].delivery
            outcomes[index] = .success(.publish([Self.resultMessage(delivery.event, body: delivery.body)]))
        }
        return outcomes
    }

    /// Where and how to deliver one event.
    private struct Target {
        let url: String
        let secrets: [String]
        /// The URL came from the merchant's configuration (a 410 disables it), not from the job's `notify_url`.
        let isMerchantWebhook: Bool
    }

    /// An event that needs a POST.
    private struct PendingDelivery: Sendable {
        let message: NotifyMessage
        let payment: PaymentRecord
        let event: PaymentEvent
        let url: String
        let isMerchantWebhook: Bool
        let signer: WebhookSigner
        /// The event serialised once: the exact bytes signed, POSTed and published to `paypipe.results`.
        let body: [UInt8]
        var number: Int { message.previousRetries + 1 }
    }

    /// A POSTed delivery with its answer, as phase 3 settles it.
    private struct Answered {
        let delivery: PendingDelivery
        let classification: WebhookResponseClass
        let attempt: WebhookAttempt
    }

    private enum Preparation {
        case decided(StageOutcome)
        case deliver(PendingDelivery)
    }

    /// Phase 1: everything up to the POST, on the payment and event data read for the batch (`nil`: no such payment).
    private func prepare(_ message: NotifyMessage, loaded read: LoadedPayment?, database: PostgresConnection) throws -> Preparation {
        guard let read else {
            throw StageFailure.unattributable(code: "unknown_payment", reason: "payment \(message.message.paymentId) does not exist")
        }
        let payment = read.payment
        if payment.stage == "done" {
            // Done means the webhook was settled and the results event was *committed for* publishing — not that it
            // was published: the worker may have crashed before the broker confirmed it, or the commit of `done` may
            // have succeeded although its answer was lost with the connection (the runtime then retries this very
            // delivery in place, `redelivered == false`, or a retry tier hands in a fresh copy). Neither case can be
            // told apart from a mere duplicate hand-off, so every delivery of a done payment publishes the event
            // again (same `message_id`: consumers dedupe on it). The webhook itself is never sent twice.
            guard let loaded = read.loaded else { return .decided(.completed) }
            return .decided(.publish([Self.resultMessage(loaded.event, body: loaded.event.body)]))
        }
        guard let loaded = read.loaded else {
            // A hand-off that overtook its commit, or a hand-made message: the result is not known yet.
            throw StageFailure.transient(code: "payment_not_terminal", reason: "payment \(payment.id) is \(payment.status.rawValue)")
        }
        let event = loaded.event
        guard let target = try target(for: payment, notifyURL: loaded.notifyURL, on: database) else {
            return .decided(try finish(event, on: database))
        }
        let number = message.previousRetries + 1
        let signer: WebhookSigner
        do throws(WebhookSignerError) {
            // A secret stored before merchant apply enforced the rules is refused too; the log names the merchant only.
            if let index = target.secrets.firstIndex(where: { WebhookSecretPolicy.problem($0) != nil }) {
                logger.error("webhook_secret_invalid", [("merchantId", .string(payment.merchantId))])
                throw .invalidSecret(index: index)
            }
            signer = try WebhookSigner(secrets: target.secrets)
        } catch {
            let code = error == .noSecret ? "no_webhook_secret" : "invalid_webhook_secret"
            try deliveries.record(WebhookAttempt(url: target.url, number: number, error: code, outcome: .failed), event: event, on: database)
            return .decided(try finish(event, on: database))
        }
        if case .refused(let reason) = urlGuard.check(target.url) {
            try deliveries.record(WebhookAttempt(url: target.url, number: number, error: "ssrf_refused: \(reason)", outcome: .failed), event: event, on: database)
            return .decided(try finish(event, on: database))
        }
        return .deliver(PendingDelivery(
            message: message, payment: payment, event: event, url: target.url, isMerchantWebhook: target.isMerchantWebhook, signer: signer,
            body: event.body))
    }

    /// Phase 2: the batch's POSTs concurrently on ``senders`` (keep-alive clients; ``EndpointGate`` caps the
    /// requests per endpoint); results in the order of `pending`.
    private func send(_ pending: [PendingDelivery]) -> [(classification: WebhookResponseClass, attempt: WebhookAttempt)] {
        senders.perform(pending.count) { [self] index, client in
            let (classification, attempt) = post(pending[index], client: client)
            return SendResult(classification: classification, attempt: attempt)
        }.map { ($0.classification, $0.attempt) }
    }

    private struct SendResult: Sendable {
        let classification: WebhookResponseClass
        let attempt: WebhookAttempt
    }

    /// One POST through the endpoint gate, on the calling pool thread's client.
    private func post(_ delivery: PendingDelivery, client: HTTPClient) -> (WebhookResponseClass, WebhookAttempt) {
        var attempt = WebhookAttempt(url: delivery.url, number: delivery.number, outcome: .retrying)
        switch gate.acquire(endpoint: Self.endpointKey(delivery.url)) {
        case .rejected(let reason):
            return (.retry(error: reason), attempt)
        case .acquired(let endpoint):
            let classification = post(delivery.body, id: delivery.event.id, to: delivery.url, signer: delivery.signer, client: client, attempt: &attempt)
            gate.release(endpoint, succeeded: !Self.isRetry(classification), pause: attempt.retryAfterSeconds)
            return (classification, attempt)
        }
    }

    /// Phase 3: record the attempt and decide the outcome.
    /// The retry case is a returned failure, not a thrown one: its attempt record and hold must commit with the batch.
    private func complete(_ answered: Answered, database: PostgresConnection) throws -> Result<StageOutcome, StageFailure> {
        let delivery = answered.delivery
        var attempt = answered.attempt
        let event = delivery.event
        switch answered.classification {
        case .delivered:
            try deliveries.record(Self.deliveredAttempt(attempt), event: event, on: database)
            return .success(try finish(event, body: delivery.body, on: database))
        case .gone:
            attempt.outcome = .disabled
            attempt.error = "endpoint_gone"
            try deliveries.record(attempt, event: event, on: database)
            if delivery.isMerchantWebhook {
                try deliveries.disableMerchantWebhook(delivery.payment.merchantId, url: delivery.url, on: database)
            }
            return .success(try finish(event, body: delivery.body, on: database))
        case .refused(let error):
            attempt.outcome = .failed
            attempt.error = error
            try deliveries.record(attempt, event: event, on: database)
            return .success(try finish(event, body: delivery.body, on: database))
        case .retry(let error):
            attempt.error = error
            guard case .retry(_, let delay) = router.retrySchedule.decision(previousRetries: delivery.message.previousRetries) else {
                attempt.outcome = .failed
                try deliveries.record(attempt, event: event, on: database)
                let reason = "webhook retries exhausted after \(delivery.number) attempt(s); last error \(error)"
                return .success(try finish(event, body: delivery.body, on: database, also: [router.deadLetter(delivery.message.delivery, code: "retries_exhausted", reason: reason)]))
            }
            try deliveries.record(attempt, event: event, on: database)
            try deliveries.holdForRetry(delivery.payment.id, seconds: delay, on: database)
            return .failure(.transient(
                code: "webhook_failed", reason: "webhook attempt \(delivery.number) to \(Self.endpointKey(delivery.url)) failed: \(error)"))
        }
    }

    /// The attempt of a 2xx answer as recorded (by either path).
    private static func deliveredAttempt(_ sent: WebhookAttempt) -> WebhookAttempt {
        var attempt = sent
        attempt.outcome = .delivered
        return attempt
    }

    private static func isRetry(_ classification: WebhookResponseClass) -> Bool {
        if case .retry = classification { return true }
        return false
    }

    /// One signed POST; fills the attempt's status code and latency.
    private func post(_ body: [UInt8], id: String, to url: String, signer: WebhookSigner, client: HTTPClient, attempt: inout WebhookAttempt) -> WebhookResponseClass {
        let timestamp = Int64(clock().timeIntervalSince1970)
        var headers = [HTTPHeader("content-type", "application/json"), HTTPHeader("user-agent", Self.userAgent)]
        headers += signer.headers(id: id, timestamp: timestamp, body: body).map { HTTPHeader($0.name, $0.value) }
        let started = DispatchTime.now()
        defer { attempt.latencyMs = Int((DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000) }
        do {
            let response = try client.send(HTTPRequest(method: "POST", url: url, headers: headers, body: body, sendGate: urlGuard.sendGate))
            attempt.statusCode = response.status
            attempt.retryAfterSeconds = RetryAfter.seconds(response.header("retry-after"))
            return WebhookResponseClass.classify(status: response.status, retryAfter: response.header("retry-after"))
        } catch {
            return WebhookResponseClass.classify(error)
        }
    }

    /// The job's `notify_url` wins; else the merchant's webhook while enabled; else nothing to deliver.
    private func target(for payment: PaymentRecord, notifyURL: String?, on database: PostgresConnection) throws -> Target? {
        let merchant = try directory.entry(payment.merchantId, on: database)?.merchant
        let secrets = merchant?.secrets.webhookSecrets ?? []
        if let notifyURL, !notifyURL.isEmpty {
            return Target(url: notifyURL, secrets: secrets, isMerchantWebhook: false)
        }
        guard let webhook = merchant?.config.webhook, webhook.enabled, !webhook.url.isEmpty else { return nil }
        return Target(url: webhook.url, secrets: secrets, isMerchantWebhook: true)
    }

    /// Marks the payment done and publishes the results event (plus `also`, e.g. a dead letter).
    private func finish(_ event: PaymentEvent, body: [UInt8]? = nil, on database: PostgresConnection, also: [AMQPOutboundMessage] = []) throws -> StageOutcome {
        try payments.markDone(event.paymentId, deliveredStatus: event.status, on: database)
        return .publish([Self.resultMessage(event, body: body ?? event.body)] + also)
    }

    /// The event on `paypipe.results`: routing key = type, persistent, `message_id` = event id (consumers dedupe on
    /// it like on `webhook-id`). Not mandatory: a results exchange nobody binds to is a valid deployment.
    public static func resultMessage(_ event: PaymentEvent, body: [UInt8]) -> AMQPOutboundMessage {
        var properties = AMQPProperties()
        properties.contentType = "application/json"
        properties.messageId = event.id
        properties.type = event.type.rawValue
        properties.persistent = true
        properties.appId = "paypipe-notify"
        properties.timestamp = event.occurredAt
        return AMQPOutboundMessage(
            exchange: PipelineTopology.resultsExchange, routingKey: event.type.rawValue, body: body,
            properties: properties, mandatory: false)
    }

    /// `scheme://host:port` of a URL: the unit of the per-endpoint concurrency limit and circuit breaker.
    static func endpointKey(_ url: String) -> String {
        guard let components = URLComponents(string: url), let host = components.host else { return url }
        let scheme = components.scheme?.lowercased() ?? "http"
        return "\(scheme)://\(host.lowercased()):\(components.port ?? (scheme == "https" ? 443 : 80))"
    }
}
