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
/// * anything else → ``StageContract/StageFailure/transient(code:reason:)``: the runtime moves the message to the next
///   retry tier (`paypipe.notify.retry.<delay>`); `Retry-After` is recorded with the attempt, and the tier schedule
///   decides the actual wait (see ``RetryAfter``).
/// * the last allowed attempt failing → the attempt is recorded `failed`, the payment is marked done, and the
///   stage returns the results event together with the runtime's own dead-letter copy (`retries_exhausted`, built by
///   ``WorkerRuntime/DeliveryRouter``), so the DLQ and the results exchange both get exactly one message.
/// * no webhook configured, webhook disabled, no usable secret, or a target refused by the SSRF guard → no POST
///   (a `failed` record with the reason when a URL was given), mark done, publish.
/// * an endpoint that has failed continuously for ``EndpointHealthPolicy/disableAfter`` is disabled
///   (`webhook_endpoints`, shared by all workers): its deliveries are **held** — a `held` record, the payment left
///   in stage `notify` away from the reconciler, the message acked, nothing published — until an operator re-enables
///   it (`paypipe webhooks endpoints enable`), which sends them. The disabling publishes `endpoint.disabled` on
///   `paypipe.results`; a delivery that runs out of attempts publishes `webhook.exhausted` (``OperationalEvent``).
///
/// Receivers must dedupe on `webhook-id` (the event id): delivery is at-least-once.
public struct NotifyStage: CallingStageHandler {
    public let stage = Stage.notify
    let directory: MerchantDirectory
    private let events: PaymentEventLoader
    let urlGuard: WebhookURLGuard
    let router: DeliveryRouter
    private let httpConfiguration: HTTPClientConfiguration
    let gate: EndpointGate
    /// `paypipe_webhooks_exhausted_total` and the other notify series (NotifyStage+Metrics.swift).
    let metrics = AttachedMetrics()
    /// The worker's webhook threads, each with a keep-alive HTTP client (shared by the lanes).
    let senders: HTTPClientPool
    let clock: @Sendable () -> Date
    private let payments = PaymentStore()
    let deliveries = WebhookDeliveryStore()
    private let endpoints = WebhookEndpointStore()
    /// When a failing endpoint is disabled (`PAYPIPE_WEBHOOK_DISABLE_AFTER`).
    let healthPolicy: EndpointHealthPolicy
    /// `PAYPIPE_WEBHOOK_RATE`: requests per second per endpoint unless the merchant sets its own; `nil`: no limit.
    let rate: Double?
    /// For `webhook_secret_invalid` (the merchant id only, never the secret).
    let logger: Logger

    public static let userAgent = "PayPipe-Webhooks/1"

    public init(
        directory: MerchantDirectory, urlGuard: WebhookURLGuard, retrySchedule: RetrySchedule,
        httpConfiguration: HTTPClientConfiguration = HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 15, followRedirects: false),
        gate: EndpointGate = EndpointGate(policy: EndpointGatePolicy(), stage: .notify), sendConcurrency: Int = 8, clock: @escaping @Sendable () -> Date = { Date() },
        healthPolicy: EndpointHealthPolicy = EndpointHealthPolicy(), rate: Double? = nil,
        logger: Logger = Logger(component: "notify", threshold: .info)
    ) {
        self.healthPolicy = healthPolicy
        self.rate = rate.flatMap { $0 > 0 ? $0 : nil }
        self.logger = logger
        self.directory = directory
        self.events = PaymentEventLoader()
        self.urlGuard = urlGuard
        self.router = DeliveryRouter(stage: .notify, retrySchedule: retrySchedule)
        var http = httpConfiguration
        http.followRedirects = false
        self.httpConfiguration = http
        self.gate = gate
        self.senders = HTTPClientPool(size: sendConcurrency, configuration: http, name: "paypipe-notify-send")
        self.clock = clock
    }

    public func decode(_ inbound: InboundMessage) throws(StageFailure) -> NotifyMessage {
        NotifyMessage(message: try StageMessage.decode(inbound.body), inbound: inbound, operation: OperationEventMessage.operation(in: inbound.body))
    }

    /// The runtime's batch shape (``CallingStageHandler``), one round, so that one slow endpoint does not serialise a
    /// whole batch behind it: (1) prepare, in one transaction: one query reads every payment of the batch with its
    /// event data, ``NotifyDecision/intake(_:)`` decides each message, then target, secret and URL checks run per
    /// payment, and deliveries to a disabled endpoint are held; (2) the POSTs, concurrently on the worker's sender
    /// threads through ``EndpointGate`` (slots, circuit and rate per endpoint); (3) record, in one transaction: what
    /// the answers say about each endpoint's health (``observe(_:transaction:)``), then the attempts and the outcomes,
    /// the delivered ones in one statement (``WebhookDeliveryBatch``), the rest one by one, as
    /// ``NotifyDecision/settle(_:endpointDisabled:retry:)`` decides.
    ///
    /// Only each payment's first message of the batch goes through them (``NotifyDecision/firstMessages(_:)``); a
    /// later one is already handled by it. A finished operation's event (NotifyStage+Operations.swift) goes its own
    /// way, one at a time.
    public func process(_ batch: [NotifyMessage], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        var results = batch.map { message in message.operation.map { processOperation(message, operationRowId: $0, database: database) } }
        let payments = batch.indices.filter { batch[$0].operation == nil }
        let first = NotifyDecision.firstMessages(payments.map { batch[$0].message.paymentId })
        let firsts = payments.indices.filter { first[$0] == nil }
        for (offset, result) in zip(firsts, processInRounds(firsts.map { batch[payments[$0]] }, database: database)) {
            results[payments[offset]] = result
        }
        for (offset, earlier) in first.enumerated() {
            guard let earlier else { continue }
            results[payments[offset]] = Self.alreadyHandled(after: results[payments[earlier]]!)
        }
        return results.map { $0! }
    }

    /// A later message for a payment its batch's first message decided: nothing is sent for it. If the batch committed
    /// the payment's results event, it is published again (same id, consumers dedupe), as a message for a done
    /// payment does; an unknown payment is unknown for it too; otherwise (a retry, a hold, a failure) the first
    /// message carries the payment on alone.
    static func alreadyHandled(after first: Result<StageOutcome, StageFailure>) -> Result<StageOutcome, StageFailure> {
        switch first {
        case .failure(.unattributable(let code, let reason)): return .failure(.unattributable(code: code, reason: reason))
        case .success(.publish(let messages)):
            let result = messages.first { message in
                guard case .event(PipelineTopology.resultsExchange, let type, _, _, _, _, _, _, _) = message else { return false }
                return PaymentEventType(rawValue: type) != nil
            }
            return .success(result.map { .publish([$0]) } ?? .completed)
        default: return .success(.completed)
        }
    }

    // MARK: The batch shape's steps

    public var callOut: CallOut { CallOut(pool: senders, gate: gate) }

    /// Prepare: one read for the batch, the intake decision, and per payment everything up to the POST.
    public func prepare(_ batch: [NotifyMessage], window: SendWindow?, transaction: PostgresConnection) throws -> [Prepared<Delivery>] {
        let loaded = try events.load(batch.map(\.message.paymentId), on: transaction)
        let reads = batch.map { message in loaded[message.message.paymentId].map { $0.map(Optional.some) } ?? .success(nil) }
        let intake = NotifyDecision.intake(reads.map(Self.read))
        var prepared: [Prepared<Delivery>] = try batch.indices.map { index in
            switch reads[index] {
            case .failure(let error): return .failed(FailureClassifier.classify(error))
            case .success(nil): return .failed(.unattributable(code: "unknown_payment", reason: "payment \(batch[index].message.paymentId) does not exist"))
            case .success(let read?):
                if case .alreadyHandled = intake[index] { preconditionFailure("process prepares each payment's first message only") }
                return try prepare(batch[index], intake: intake[index], read: read, transaction: transaction)
            }
        }
        try holdDisabled(&prepared, transaction: transaction)
        return prepared
    }

    /// What prepare read, as ``NotifyDecision`` sees it.
    private static func read(_ loaded: Result<LoadedPayment?, any Error>) -> NotifyDecision.Read {
        guard case .success(let read) = loaded else { return .failed }
        guard let read else { return .missing }
        return .found(paymentId: read.payment.id, status: read.payment.status, done: read.payment.stage == .done, hasEvent: read.loaded != nil)
    }

    /// Per endpoint (scheme, host and port): its slots, circuit and rate.
    public func gating(_ call: Delivery, for message: NotifyMessage) -> GatedCall {
        GatedCall(EndpointGate.Call(endpoint: Self.endpointKey(call.url)), rate: call.rate)
    }

    /// A delivery the gate held back is a retry like any failed attempt, but not a failure of the endpoint (its
    /// health and circuit never see it).
    public func heldBack(_ call: Delivery, for message: NotifyMessage, because reason: HeldBack) -> SendResult {
        guard case .gate(let refusal) = reason else { preconditionFailure("notify's calls are not windowed") }
        return SendResult(classification: .retry(error: NotifyDecision.error(refusal)), attempt: WebhookAttempt(url: call.url, number: call.number, outcome: .retrying), answeredAt: nil)
    }

    /// One signed POST, on a pool thread's client, holding the endpoint's slot.
    public func perform(_ call: Delivery, for message: NotifyMessage, window: SendWindow?, client: HTTPClient) -> (answer: SendResult, report: CircuitState.Report) {
        var attempt = WebhookAttempt(url: call.url, number: call.number, outcome: .retrying)
        let classification = post(call.body, id: call.event.id, to: call.url, signer: call.signer, client: client, attempt: &attempt)
        return (SendResult(classification: classification, attempt: attempt, answeredAt: clock()),
                Self.isRetry(classification) ? .failed(pause: attempt.retryAfterSeconds) : .healthy)
    }

    /// Record, first: what the answers say about each endpoint's health, and which endpoints this batch disables.
    /// Only answers count (a 2xx, or a failure that will be retried); the worker's own refusals and final answers
    /// (410, SSRF) do not. A failure to record health does not fail the deliveries (its savepoint is rolled back, the
    /// next batch observes again); it is counted.
    public func observe(_ answers: [Answered<NotifyMessage, Delivery, SendResult>], transaction: PostgresConnection) -> HealthDecision {
        let observations: [EndpointObservation] = answers.compactMap { answered in
            guard let at = answered.answer.answeredAt else { return nil }
            switch answered.answer.classification {
            case .delivered: return EndpointObservation(endpoint: answered.call.endpoint, at: at, error: nil)
            case .retry(let error): return EndpointObservation(endpoint: answered.call.endpoint, at: at, error: error)
            case .gone, .refused: return nil
            }
        }
        guard !observations.isEmpty else { return HealthDecision() }
        do {
            return try transaction.savepoint { savepoint in
                let current = try endpoints.lock(Set(observations.map(\.endpoint)), on: savepoint)
                let decision = healthPolicy.decide(observations, current: current)
                try endpoints.write(decision.updates, on: savepoint)
                return HealthDecision(newlyDisabled: Dictionary(uniqueKeysWithValues: decision.disabled.map { ($0, decision.updates[$0]!) }))
            }
        } catch {
            countHealthFailure()
            return HealthDecision()
        }
    }

    /// Record: every answer as ``NotifyDecision/settle(_:endpointDisabled:retry:)`` decides, the delivered ones in one
    /// statement, the rest one by one. A failed delivery to an endpoint this batch disables is held instead of
    /// retried, and one of them carries the `endpoint.disabled` event.
    public func record(
        _ answers: [Answered<NotifyMessage, Delivery, SendResult>], observed health: HealthDecision, transaction: PostgresConnection
    ) throws -> [Recorded] {
        var carried: Set<WebhookEndpoint> = []
        let settling = answers.map { answered in
            let delivery = answered.call, result = answered.answer
            let disabled = health.newlyDisabled[delivery.endpoint]
            let settlement = NotifyDecision.settle(
                result.classification, endpointDisabled: disabled != nil,
                retry: router.retrySchedule.decision(previousRetries: delivery.message.previousRetries))
            var disabledEvent: OperationalEvent?
            if case .held = settlement, let disabled, carried.insert(delivery.endpoint).inserted {
                disabledEvent = OperationalEvent.endpointDisabled(delivery.endpoint, health: disabled)
            }
            return Settling(delivery: delivery, classification: result.classification, attempt: result.attempt,
                            settlement: settlement, disabledEvent: disabledEvent)
        }
        let delivered = try settleDelivered(settling, on: transaction)
        return try settling.indices.map { index in .decided(try delivered[index] ?? complete(settling[index], database: transaction)) }
    }

    /// Notify takes one round and records no `again`: a message is always settled.
    public func unsettled(_ message: NotifyMessage) -> StageFailure {
        .transient(code: "webhook_failed", reason: "payment \(message.message.paymentId) did not settle in its round")
    }

    /// The operational events of what committed: `paypipe_webhook_events_total` and `paypipe_webhooks_exhausted_total`.
    public func committed(_ answers: [Answered<NotifyMessage, Delivery, SendResult>], _ recorded: [Result<Recorded, StageFailure>]) {
        for case .success(.decided(.success(.publish(let messages)))) in recorded {
            for case .event(PipelineTopology.resultsExchange, let type, _, _, _, _, _, _, _) in messages {
                switch OperationalEvent.Kind(rawValue: type) {
                case .webhookExhausted?: countExhausted()
                case .endpointDisabled?: countEvent(.endpointDisabled)
                case nil: break
                }
            }
        }
    }

    /// The bulk step of record: every `.delivered` answer (one per payment: only a payment's first message is
    /// delivered), recorded and marked done in one statement, with the outcome ``complete(_:database:)`` gives it;
    /// `nil` (the per-message path) for everything else — gone, retry, exhausted, a payment the statement did not settle.
    private func settleDelivered(_ items: [Settling], on database: PostgresConnection) throws -> [Result<StageOutcome, StageFailure>?] {
        let candidates = items.indices.filter { index in
            if case .delivered = items[index].classification { return true }
            return false
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
    struct Target {
        let url: String
        let secrets: [String]
        /// The URL came from the merchant's configuration (a 410 disables it), not from the job's `notify_url`.
        let isMerchantWebhook: Bool
        /// The merchant's `webhook.ratePerSecond`.
        let ratePerSecond: Double?
    }

    /// An event that needs a POST: the call of the call-out phase. A class, immutable: the runtime's batch shape
    /// passes each call through several generic containers (prepared, answered, record items), and copying a struct of
    /// two dozen references at every step was about 7% of the notify worker's instructions (callgrind).
    public final class Delivery: Sendable {
        let message: NotifyMessage
        let payment: PaymentRecord
        let event: PaymentEvent
        let url: String
        let isMerchantWebhook: Bool
        let signer: WebhookSigner
        /// The event serialised once: the exact bytes signed, POSTed and published to `paypipe.results`.
        let body: [UInt8]
        /// Requests per second allowed to the endpoint (the merchant's, else `PAYPIPE_WEBHOOK_RATE`); `nil`: no limit.
        let rate: Double?
        var number: Int { message.previousRetries + 1 }
        var endpoint: WebhookEndpoint { WebhookEndpoint(merchantId: payment.merchantId, url: url) }

        init(message: NotifyMessage, payment: PaymentRecord, event: PaymentEvent, url: String, isMerchantWebhook: Bool,
             signer: WebhookSigner, body: [UInt8], rate: Double?) {
            (self.message, self.payment, self.event, self.url) = (message, payment, event, url)
            (self.isMerchantWebhook, self.signer, self.body, self.rate) = (isMerchantWebhook, signer, body, rate)
        }
    }

    /// A POST's answer.
    public struct SendResult: Sendable {
        let classification: WebhookResponseClass
        let attempt: WebhookAttempt
        /// When the answer came, if a request was sent (not refused by the gate): what endpoint health goes by.
        let answeredAt: Date?
    }

    /// What this batch's answers did to the endpoints' health.
    public struct HealthDecision: Sendable {
        var newlyDisabled: [WebhookEndpoint: EndpointHealth] = [:]
    }

    /// An answered delivery as record settles it.
    private struct Settling {
        let delivery: Delivery
        let classification: WebhookResponseClass
        let attempt: WebhookAttempt
        let settlement: NotifyDecision.Settlement
        /// The batch's one `endpoint.disabled` event for the endpoint, on the first delivery its disabling holds.
        let disabledEvent: OperationalEvent?
    }

    /// Prepare, for one payment's first message, as ``NotifyDecision/intake(_:)`` decided, on the payment and event
    /// data read for the batch.
    private func prepare(
        _ message: NotifyMessage, intake: NotifyDecision.Intake, read: LoadedPayment, transaction database: PostgresConnection
    ) throws -> Prepared<Delivery> {
        let payment = read.payment
        if intake == .republish {
            // Done means the webhook was settled and the results event was *committed for* publishing — not that it
            // was published: the worker may have crashed before the broker confirmed it, or the commit of `done` may
            // have succeeded although its answer was lost with the connection (the runtime then retries this very
            // delivery in place, `redelivered == false`, or a retry tier hands in a fresh copy). Neither case can be
            // told apart from a mere duplicate hand-off, so every delivery of a done payment publishes the event
            // again (same `message_id`: consumers dedupe on it). The webhook itself is never sent twice.
            guard let loaded = read.loaded else { return .finished(.completed) }
            return .finished(.publish([Self.resultMessage(loaded.event, body: loaded.event.body)]))
        }
        guard intake == .deliver, let loaded = read.loaded else {
            // A hand-off that overtook its commit, or a hand-made message: the result is not known yet.
            return .failed(.transient(code: "payment_not_terminal", reason: "payment \(payment.id) is \(payment.status.rawValue)"))
        }
        let event = loaded.event
        guard let target = try target(for: payment, notifyURL: loaded.notifyURL, on: database) else {
            return .finished(try finish(event, on: database))
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
            return .finished(try finish(event, on: database))
        }
        if case .refused(let reason) = urlGuard.check(target.url) {
            try deliveries.record(WebhookAttempt(url: target.url, number: number, error: "ssrf_refused: \(reason)", outcome: .failed), event: event, on: database)
            return .finished(try finish(event, on: database))
        }
        return .call(Delivery(
            message: message, payment: payment, event: event, url: target.url, isMerchantWebhook: target.isMerchantWebhook, signer: signer,
            body: event.body, rate: target.ratePerSecond ?? rate))
    }

    /// Prepare's last step: deliveries whose endpoint is disabled are held, not sent (one read for the batch).
    private func holdDisabled(_ prepared: inout [Prepared<Delivery>], transaction database: PostgresConnection) throws {
        let pending = prepared.indices.compactMap { index -> (index: Int, delivery: Delivery)? in
            guard case .call(let delivery) = prepared[index] else { return nil }
            return (index, delivery)
        }
        guard !pending.isEmpty else { return }
        let disabled = try endpoints.disabled(among: Set(pending.map(\.delivery.endpoint)), on: database)
        guard !disabled.isEmpty else { return }
        var held: [UUID] = []
        for (index, delivery) in pending {
            let health = disabled[delivery.endpoint]
            guard case .hold(let republish) = NotifyDecision.dispatch(endpointDisabled: health != nil, redelivered: delivery.message.inbound.redelivered)
            else { continue }
            // The record first: a held payment without its `held` attempt could not be found by a re-enable.
            try deliveries.record(
                WebhookAttempt(url: delivery.url, number: delivery.number, error: "endpoint_disabled", outcome: .held),
                event: delivery.event, on: database)
            held.append(delivery.payment.id)
            let event = republish ? health.map { OperationalEvent.endpointDisabled(delivery.endpoint, health: $0) } : nil
            prepared[index] = .finished(event.map { .publish([$0.message]) } ?? .completed)
        }
        try deliveries.hold(held, on: database)
    }

    /// Record, for one answer that is not a settled delivery: the attempt and the outcome.
    /// The retry case is a returned failure, not a thrown one: its attempt record and hold must commit with the batch.
    private func complete(_ answered: Settling, database: PostgresConnection) throws -> Result<StageOutcome, StageFailure> {
        let delivery = answered.delivery
        var attempt = answered.attempt
        let event = delivery.event
        switch answered.settlement {
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
        case .held(let error):
            attempt.error = error
            attempt.outcome = .held
            try deliveries.record(attempt, event: event, on: database)
            try deliveries.hold([delivery.payment.id], on: database)
            return .success(answered.disabledEvent.map { .publish([$0.message]) } ?? .completed)
        case .exhausted(let error):
            attempt.error = error
            attempt.outcome = .failed
            try deliveries.record(attempt, event: event, on: database)
            let exhausted = OperationalEvent.webhookExhausted(event, url: delivery.url, attempts: delivery.number, lastError: error, at: clock())
            return .success(try finish(event, body: delivery.body, on: database, also: [
                OutboundMessage.exhausted(delivery.message.inbound, after: Self.failed(delivery, error: error)), exhausted.message,
            ]))
        case .retry(let error, let delay):
            attempt.error = error
            try deliveries.record(attempt, event: event, on: database)
            try deliveries.holdForRetry(delivery.payment.id, seconds: delay, on: database)
            return .failure(Self.failed(delivery, error: error))
        }
    }

    /// A failed attempt as the runtime's retry policy sees it: retried through the tiers, or dead-lettered with it.
    private static func failed(_ delivery: Delivery, error: String) -> StageFailure {
        .transient(code: "webhook_failed", reason: "webhook attempt \(delivery.number) to \(endpointKey(delivery.url)) failed: \(error)")
    }

    /// The attempt of a 2xx answer as recorded (by either path).
    static func deliveredAttempt(_ sent: WebhookAttempt) -> WebhookAttempt {
        var attempt = sent
        attempt.outcome = .delivered
        return attempt
    }

    static func isRetry(_ classification: WebhookResponseClass) -> Bool {
        if case .retry = classification { return true }
        return false
    }

    /// One signed POST; fills the attempt's status code and latency.
    func post(_ body: [UInt8], id: String, to url: String, signer: WebhookSigner, client: HTTPClient, attempt: inout WebhookAttempt) -> WebhookResponseClass {
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
    func target(for payment: PaymentRecord, notifyURL: String?, on database: PostgresConnection) throws -> Target? {
        let merchant = try directory.entry(payment.merchantId, on: database)?.merchant
        let secrets = merchant?.secrets.webhookSecrets ?? []
        if let notifyURL, !notifyURL.isEmpty {
            return Target(url: notifyURL, secrets: secrets, isMerchantWebhook: false, ratePerSecond: merchant?.config.webhook?.ratePerSecond)
        }
        guard let webhook = merchant?.config.webhook, webhook.enabled, !webhook.url.isEmpty else { return nil }
        return Target(url: webhook.url, secrets: secrets, isMerchantWebhook: true, ratePerSecond: webhook.ratePerSecond)
    }

    /// Marks the payment done and publishes the results event (plus `also`, e.g. a dead letter).
    private func finish(_ event: PaymentEvent, body: [UInt8]? = nil, on database: PostgresConnection, also: [OutboundMessage] = []) throws -> StageOutcome {
        try payments.markDone(event.paymentId, deliveredStatus: event.status, on: database)
        return .publish([Self.resultMessage(event, body: body ?? event.body)] + also)
    }

    /// The event on `paypipe.results`: routing key = type, persistent, `message_id` = event id (consumers dedupe on
    /// it like on `webhook-id`), `correlation_id` = the job's id. Not mandatory: a results exchange nobody binds to is a
    /// valid deployment.
    public static func resultMessage(_ event: PaymentEvent, body: [UInt8]) -> OutboundMessage {
        resultsExchangeMessage(id: event.id, type: event.type.rawValue, body: body, timestamp: event.occurredAt, merchantId: event.merchantId,
                               about: event.subject)
    }

    /// Any event on `paypipe.results` (payment results and ``OperationalEvent``s): routing key and AMQP `type` = the
    /// event type, `message_id` = the event id, persistent, not mandatory. A merchant's event is also routed by
    /// `<type>.<merchantId>` (``PipelineTopology/merchantResultsKey(type:merchantId:)``), for readers bound to their
    /// merchants only. `subject` gives the `correlation_id` and the headers (``ResultSubject``); the `type` header is
    /// always set, and `merchantId` falls back to the routing merchant.
    static func resultsExchangeMessage(id: String, type: String, body: [UInt8], timestamp: Date, merchantId: String? = nil,
                                       about subject: ResultSubject = ResultSubject()) -> OutboundMessage {
        var headers = subject.headers
        headers["type"] = type
        if headers["merchantId"] == nil { headers["merchantId"] = merchantId }
        return .event(exchange: PipelineTopology.resultsExchange, type: type, id: id, body: body, timestamp: timestamp,
                      alsoRoutedAs: merchantId.map { [PipelineTopology.merchantResultsKey(type: type, merchantId: $0)] } ?? [],
                      correlationId: subject.correlationId, headers: headers)
    }

    /// `scheme://host:port` of a URL: the unit of the endpoint gate's concurrency slots, circuit and rate.
    public static func endpointKey(_ url: String) -> String {
        guard let components = URLComponents(string: url), let host = components.host else { return url }
        let scheme = components.scheme?.lowercased() ?? "http"
        return "\(scheme)://\(host.lowercased()):\(components.port ?? (scheme == "https" ? 443 : 80))"
    }
}
