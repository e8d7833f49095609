import Dispatch
import Foundation
import HTTP
import Pipeline
import Postgres
import Synchronization

/// Stage 4: a terminal payment's result, or a finished operation's event (``NotifyEvent``) → a signed Standard
/// Webhooks POST to the merchant, and the same event on `paypipe.results` (topic, routing key = event type).
///
/// One delivery path for every event, inside the runtime's batch shape (``CallingStageHandler``), never holding a
/// transaction across the HTTP call: the batch is read (``NotifyEventReader``), ``NotifyDecision`` decides, target,
/// secret and SSRF checks run, the event is serialised once and signed with a fresh `webhook-timestamp`, POSTed (15 s,
/// no redirects) to the job's `notify_url` or the merchant's webhook through the ``EndpointGate``. Every attempt is
/// written to `webhook_deliveries`.
///
/// * 2xx → settled: the payment marked done (the operation notified).
/// * 410 → the merchant's webhook is disabled (`config.webhook.enabled=false`), settled.
/// * anything else → a retry through the runtime's tiers (`paypipe.notify.retry.<delay>`); `Retry-After` is recorded
///   with the attempt, and the tier schedule decides the actual wait (see ``RetryAfter``).
/// * the last allowed attempt failing → the attempt is recorded `failed`, settled, and the runtime's own dead-letter
///   copy (`retries_exhausted`, built by ``WorkerRuntime/DeliveryRouter``) and `webhook.exhausted` are published.
/// * no webhook configured, webhook disabled, no usable secret, or a target refused by the SSRF guard → no POST
///   (a `failed` record with the reason when a URL was given), settled.
/// * an endpoint that has failed continuously for ``EndpointHealthPolicy/disableAfter`` is disabled
///   (`webhook_endpoints`, shared by all workers): its deliveries are **held** — a `held` record, the payment left
///   in stage `notify` away from the reconciler (an operation left un-notified), the message acked — until an
///   operator re-enables it (`paypipe webhooks endpoints enable`), which sends them. The disabling publishes
///   `endpoint.disabled` on `paypipe.results`; a delivery that runs out of attempts publishes `webhook.exhausted`
///   (``OperationalEvent``).
///
/// The results event goes out as ``NotifyDecision/publishesResults(_:webhookSettled:)`` decides for
/// `PAYPIPE_RESULTS_TIMING`: by default with the first decision on the event, whatever the webhook's fate (a retry's
/// copy is published together with it: ``WorkerRuntime/OutboundMessage/retry(_:after:)``); with `webhook`, once the
/// webhook is settled. Receivers must dedupe on `webhook-id` / `message_id` (the event id): delivery is at-least-once.
public struct NotifyStage: CallingStageHandler {
    public let stage = Stage.notify
    /// The batch read and each event's target (the merchant directory's webhook and secrets).
    private let reader: NotifyEventReader
    let urlGuard: WebhookURLGuard
    /// The runtime's retry tiers: whether a failed attempt is retried or was the last (``NotifyDecision/settle(_:endpointDisabled:retry:)``).
    let retrySchedule: RetrySchedule
    private let httpConfiguration: HTTPClientConfiguration
    let gate: EndpointGate
    /// The notify series, named and registered at start by ``attach(metrics:)`` (NotifyStageLaunch.swift) and counted
    /// as the deliveries commit.
    let metrics = AttachedMetrics()
    /// The worker's webhook threads, each with a keep-alive HTTP client (shared by the lanes).
    let senders: HTTPClientPool
    let clock: @Sendable () -> Date
    let deliveries = WebhookDeliveryStore()
    private let endpoints = WebhookEndpointStore()
    /// When a failing endpoint is disabled (`PAYPIPE_WEBHOOK_DISABLE_AFTER`).
    let healthPolicy: EndpointHealthPolicy
    /// `PAYPIPE_WEBHOOK_RATE`: requests per second per endpoint unless the merchant sets its own; `nil`: no limit.
    let rate: Double?
    /// For `webhook_secret_invalid` (the merchant id only, never the secret).
    let logger: Logger
    /// `PAYPIPE_RESULTS_TIMING`: when the results event is published.
    let resultsTiming: ResultsTiming

    public static let userAgent = "PayPipe-Webhooks/1"

    public init(
        directory: MerchantDirectory, urlGuard: WebhookURLGuard, retrySchedule: RetrySchedule,
        httpConfiguration: HTTPClientConfiguration = HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 15, followRedirects: false),
        gate: EndpointGate = EndpointGate(stage: .notify), sendConcurrency: Int = 8, clock: @escaping @Sendable () -> Date = { Date() },
        healthPolicy: EndpointHealthPolicy = EndpointHealthPolicy(), rate: Double? = nil,
        logger: Logger = Logger(component: "notify", threshold: .info), resultsTiming: ResultsTiming = .standard
    ) {
        self.resultsTiming = resultsTiming
        self.healthPolicy = healthPolicy
        self.rate = rate.flatMap { $0 > 0 ? $0 : nil }
        self.logger = logger
        self.reader = NotifyEventReader(directory: directory)
        self.urlGuard = urlGuard
        self.retrySchedule = retrySchedule
        var http = httpConfiguration
        http.followRedirects = false
        self.httpConfiguration = http
        self.gate = gate
        self.senders = HTTPClientPool(size: sendConcurrency, configuration: http, name: "paypipe-notify-send")
        self.clock = clock
    }

    public func spanAttributes(of message: NotifyMessage) -> [SpanAttribute] { message.spanAttributes }

    public func decode(_ inbound: InboundMessage) throws(StageFailure) -> NotifyMessage { try NotifyMessage(decoding: inbound) }

    /// The runtime's batch shape (``CallingStageHandler``), one round, so that one slow endpoint does not serialise a
    /// whole batch behind it: (1) prepare, in one transaction: the batch read, ``NotifyDecision/intake(_:)`` decides each
    /// message, then target, secret and URL checks run per event, and deliveries to a disabled endpoint are held; (2)
    /// the POSTs, concurrently on the worker's sender threads through ``EndpointGate`` (slots, circuit and rate per
    /// endpoint); (3) record, in one transaction: what the answers say about each endpoint's health
    /// (``observe(_:transaction:)``), then the attempts and the outcomes, the delivered payment results in one
    /// statement (``WebhookDeliveryBatch``), the rest one by one, as ``NotifyDecision/settle(_:endpointDisabled:retry:)``
    /// decides.
    ///
    /// Only each event's first message of the batch goes through them (``NotifyDecision/firstMessages(_:)``); a later
    /// one is already handled by it.
    public func process(_ batch: [NotifyMessage], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        let first = NotifyDecision.firstMessages(batch.map(\.request))
        let firsts = batch.indices.filter { first[$0] == nil }
        var results = [Result<StageOutcome, StageFailure>?](repeating: nil, count: batch.count)
        for (index, result) in zip(firsts, processInRounds(firsts.map { batch[$0] }, database: database)) {
            results[index] = result
        }
        for (index, earlier) in first.enumerated() {
            guard let earlier else { continue }
            results[index] = NotifyDecision.alreadyHandled(after: results[earlier]!)
        }
        return results.map { $0! }
    }

    // MARK: The batch shape's steps

    public var callOut: CallOut { CallOut(pool: senders, gate: gate) }

    /// Prepare: one read for the batch, the intake decision, and per event everything up to the POST.
    public func prepare(_ batch: [NotifyMessage], window: SendWindow?, transaction: PostgresConnection) throws -> [Prepared<Delivery>] {
        let reads = try reader.read(batch, on: transaction)
        let intake = NotifyDecision.intake(zip(batch, reads).map { NotifyDecision.Read($1, request: $0.request) })
        var prepared: [Prepared<Delivery>] = try batch.indices.map { index in
            switch reads[index] {
            case .failure(let error): return .failed(FailureClassifier.classify(error))
            case .success(nil): return .failed(.unattributable(code: "unknown_payment", reason: "\(batch[index].subjectName) does not exist"))
            case .success(let read?):
                if case .alreadyHandled = intake[index] { preconditionFailure("process prepares each event's first message only") }
                return try prepare(batch[index], intake: intake[index], read: read, transaction: transaction)
            }
        }
        try holdDisabled(&prepared, transaction: transaction)
        return prepared
    }

    /// Per endpoint (scheme, host and port): its slots, circuit and rate.
    public func gating(_ call: Delivery, for message: NotifyMessage) -> GatedCall {
        GatedCall(EndpointGate.Call(endpoint: Self.endpointKey(call.url)), rate: call.rate)
    }

    /// A delivery the gate held back is a retry like any failed attempt, but not a failure of the endpoint (its
    /// health and circuit never see it).
    public func heldBack(_ call: Delivery, for message: NotifyMessage, because reason: HeldBack) -> WebhookAnswer {
        guard case .gate(let refusal) = reason else { preconditionFailure("notify's calls are not windowed") }
        return WebhookAnswer(classification: .retry(error: NotifyDecision.error(refusal)), attempt: WebhookAttempt(url: call.url, number: call.number, outcome: .retrying), answeredAt: nil)
    }

    /// One signed POST, on a pool thread's client, holding the endpoint's slot.
    public func perform(_ call: Delivery, for message: NotifyMessage, window: SendWindow?, client: HTTPClient) -> (answer: WebhookAnswer, report: CallReport) {
        var attempt = WebhookAttempt(url: call.url, number: call.number, outcome: .retrying)
        let classification = post(call.body, id: call.event.id, to: call.url, signer: call.signer, client: client, attempt: &attempt,
                                  trace: message.inbound.trace)
        return (WebhookAnswer(classification: classification, attempt: attempt, answeredAt: clock()),
                classification.isRetry ? .failed(pause: attempt.retryAfterSeconds) : .healthy)
    }

    /// Record, first: what the answers say about each endpoint's health, and which endpoints this batch disables (with
    /// their new health).
    /// Only answers count (a 2xx, or a failure that will be retried); the worker's own refusals and final answers
    /// (410, SSRF) do not. Successes alone on endpoints that had no row when prepare read them change nothing and
    /// cost no statement (``EndpointHealthPolicy/mayChange(_:tracked:)``, which states the race this accepts). A
    /// failure to record health does not fail the deliveries (its savepoint is rolled back, the next batch observes
    /// again); it is counted.
    public func observe(_ answers: [Answered<NotifyMessage, Delivery, WebhookAnswer>], transaction: PostgresConnection) -> [WebhookEndpoint: EndpointHealth] {
        let observations = answers.compactMap { $0.answer.observation(of: $0.call.endpoint) }
        let tracked = Set(answers.lazy.filter(\.call.endpointTracked).map(\.call.endpoint))
        guard EndpointHealthPolicy.mayChange(observations, tracked: tracked) else { return [:] }
        do {
            return try transaction.savepoint { savepoint in
                let current = try endpoints.lockedRows(of: Set(observations.map(\.endpoint)), on: savepoint)
                let decision = healthPolicy.decide(observations, current: current)
                try endpoints.write(decision.updates, on: savepoint)
                return decision.newlyDisabled
            }
        } catch {
            metrics.report { $0.increment(Self.healthFailuresMetric, labels: [:]) }
            return [:]
        }
    }

    /// Record: every answer as ``NotifyDecision/settle(_:endpointDisabled:retry:)`` decides, the delivered ones in one
    /// statement, the rest one by one. A failed delivery to an endpoint this batch disables is held instead of
    /// retried, and one of them carries the `endpoint.disabled` event.
    public func record(
        _ answers: [Answered<NotifyMessage, Delivery, WebhookAnswer>], observed newlyDisabled: [WebhookEndpoint: EndpointHealth], transaction: PostgresConnection
    ) throws -> [Recorded] {
        var carried: Set<WebhookEndpoint> = []
        let settling = answers.map { answered in
            let delivery = answered.call, result = answered.answer
            let disabled = newlyDisabled[delivery.endpoint]
            let settlement = NotifyDecision.settle(
                result.classification, endpointDisabled: disabled != nil,
                retry: retrySchedule.decision(previousRetries: delivery.message.previousRetries))
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
        .transient(code: "webhook_failed", reason: "\(message.subjectName) did not settle in its round")
    }

    /// The operational events of what committed: `paypipe_webhook_events_total{type}`, and for a delivery whose failed
    /// attempt was its last (``NotifyDecision/Settlement/exhausted(error:)``) `paypipe_webhooks_exhausted_total` first.
    public func committed(_ answers: [Answered<NotifyMessage, Delivery, WebhookAnswer>], _ recorded: [Result<Recorded, StageFailure>]) {
        for case .success(.decided(.success(.publish(let messages)))) in recorded {
            for case .event(ResultsExchange.name, let type, _, _, _, _, _, _, _) in messages {
                guard let kind = OperationalEvent.Kind(rawValue: type) else { continue }
                if kind == .webhookExhausted { metrics.report { $0.increment(Self.exhaustedMetric, labels: ["stage": "notify"]) } }
                metrics.report { $0.increment(Self.eventsMetric, labels: ["type": kind.rawValue]) }
            }
        }
    }

    /// The bulk step of record: every `.delivered` payment result (one per payment: only a payment's first message is
    /// delivered), recorded and marked done in one statement, with the outcome ``complete(_:database:)`` gives it;
    /// `nil` (the per-event path) for everything else — gone, retry, exhausted, an operation's event, a payment the
    /// statement did not settle.
    private func settleDelivered(_ items: [Settling], on database: PostgresConnection) throws -> [Result<StageOutcome, StageFailure>?] {
        let candidates = items.indices.compactMap { index -> (index: Int, entry: WebhookDeliveryBatch.Entry)? in
            guard case .delivered = items[index].classification,
                  let entry = WebhookDeliveryBatch.Entry(attempt: items[index].attempt.asDelivered, event: items[index].delivery.event)
            else { return nil }
            return (index, entry)
        }
        let settled = try WebhookDeliveryBatch().settle(candidates.map(\.entry), on: database)
        var outcomes = [Result<StageOutcome, StageFailure>?](repeating: nil, count: items.count)
        for (index, _) in candidates where settled.contains(items[index].delivery.event.paymentId) {
            outcomes[index] = .success(NotifyDecision.outcome(of: items[index].delivery.event, results: items[index].delivery.results, webhookSettled: true))
        }
        return outcomes
    }

    /// An event that needs a POST: the call of the call-out phase. A class, immutable: the runtime's batch shape
    /// passes each call through several generic containers (prepared, answered, record items), and copying a struct of
    /// two dozen references at every step was about 7% of the notify worker's instructions (callgrind).
    public final class Delivery: Sendable {
        let message: NotifyMessage
        let event: NotifyEvent
        let url: String
        let isMerchantWebhook: Bool
        let signer: WebhookSigner
        /// Requests per second allowed to the endpoint (the merchant's, else `PAYPIPE_WEBHOOK_RATE`); `nil`: no limit.
        let rate: Double?
        /// What the results publication goes by.
        let results: NotifyDecision.Results
        /// The endpoint had a `webhook_endpoints` row when prepare read it (``holdDisabled(_:transaction:)``); until
        /// read, assumed so, which only costs the locked health path.
        let endpointTracked: Bool
        var number: Int { message.previousRetries + 1 }
        var endpoint: WebhookEndpoint { WebhookEndpoint(merchantId: event.merchantId, url: url) }
        /// The event serialised once: the exact bytes signed, POSTed and published to `paypipe.results`.
        var body: [UInt8] { event.body }

        init(message: NotifyMessage, event: NotifyEvent, url: String, isMerchantWebhook: Bool, signer: WebhookSigner, rate: Double?,
             results: NotifyDecision.Results, endpointTracked: Bool = true) {
            (self.message, self.event, self.url, self.isMerchantWebhook) = (message, event, url, isMerchantWebhook)
            (self.signer, self.rate, self.results, self.endpointTracked) = (signer, rate, results, endpointTracked)
        }

        /// This delivery, knowing whether its endpoint has a row.
        func knowing(endpointTracked tracked: Bool) -> Delivery {
            tracked == endpointTracked ? self : Delivery(
                message: message, event: event, url: url, isMerchantWebhook: isMerchantWebhook, signer: signer, rate: rate, results: results,
                endpointTracked: tracked)
        }
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

    /// Prepare, for one event's first message, as ``NotifyDecision/intake(_:)`` decided, on what the batch read.
    private func prepare(
        _ message: NotifyMessage, intake: NotifyDecision.Intake, read: NotifyRead, transaction database: PostgresConnection
    ) throws -> Prepared<Delivery> {
        let results = NotifyDecision.Results(
            timing: resultsTiming, attempted: read.attempted, previousRetries: message.previousRetries, redelivered: message.inbound.redelivered)
        if intake == .republish {
            // Settled means the webhook was settled and the results event was *committed for* publishing — not that it
            // was published: the worker may have crashed before the broker confirmed it, or the commit may have
            // succeeded although its answer was lost with the connection (the runtime then retries this very
            // delivery in place, `redelivered == false`, or a retry tier hands in a fresh copy). Neither case can be
            // told apart from a mere duplicate hand-off, so such a message publishes the event again as the results
            // rule says (same `message_id`: consumers dedupe). The webhook itself is never sent twice.
            guard let event = read.event, NotifyDecision.publishesResults(results, webhookSettled: true) else { return .finished(.completed) }
            return .finished(.publish([event.resultMessage]))
        }
        guard intake == .deliver, let event = read.event else {
            // A hand-off that overtook its commit, or a hand-made message: the result is not known yet.
            return .failed(.transient(code: "payment_not_terminal", reason: read.pending))
        }
        guard let target = try reader.target(for: read.payment, notifyURL: read.notifyURL, on: database) else {
            return .finished(try finish(event, results: results, on: database))
        }
        let number = message.previousRetries + 1
        let signer: WebhookSigner
        do throws(WebhookSignerError) {
            // A secret stored before merchant apply enforced the rules is refused too; the log names the merchant only.
            if let index = target.secrets.firstIndex(where: { WebhookSecretPolicy.problem($0) != nil }) {
                logger.error("webhook_secret_invalid", [("merchantId", .string(event.merchantId))])
                throw .invalidSecret(index: index)
            }
            signer = try WebhookSigner(secrets: target.secrets)
        } catch {
            let code = error == .noSecret ? "no_webhook_secret" : "invalid_webhook_secret"
            try deliveries.record(WebhookAttempt(url: target.url, number: number, error: code, outcome: .failed), event: event, on: database)
            return .finished(try finish(event, results: results, on: database))
        }
        if case .refused(let reason) = urlGuard.check(target.url) {
            try deliveries.record(WebhookAttempt(url: target.url, number: number, error: "ssrf_refused: \(reason)", outcome: .failed), event: event, on: database)
            return .finished(try finish(event, results: results, on: database))
        }
        return .call(Delivery(
            message: message, event: event, url: target.url, isMerchantWebhook: target.isMerchantWebhook, signer: signer,
            rate: target.ratePerSecond ?? rate, results: results))
    }

    /// Prepare's last step, on one read of the batch's endpoints: deliveries whose endpoint is disabled are held, not
    /// sent; the others learn whether their endpoint has a row (what record's ``observe(_:transaction:)`` goes by).
    private func holdDisabled(_ prepared: inout [Prepared<Delivery>], transaction database: PostgresConnection) throws {
        let pending = prepared.indices.compactMap { index -> (index: Int, delivery: Delivery)? in
            guard case .call(let delivery) = prepared[index] else { return nil }
            return (index, delivery)
        }
        guard !pending.isEmpty else { return }
        let rows = try endpoints.rows(of: Set(pending.map(\.delivery.endpoint)), on: database)
        for (index, delivery) in pending {
            prepared[index] = .call(delivery.knowing(endpointTracked: rows[delivery.endpoint] != nil))
        }
        let disabled = rows.filter { $0.value.isDisabled }
        guard !disabled.isEmpty else { return }
        var held: [Delivery] = []
        for (index, delivery) in pending {
            let health = disabled[delivery.endpoint]
            guard case .hold(let republish) = NotifyDecision.dispatch(endpointDisabled: health != nil, redelivered: delivery.message.inbound.redelivered)
            else { continue }
            // The record first: a held delivery without its `held` attempt could not be found by a re-enable.
            try deliveries.record(
                WebhookAttempt(url: delivery.url, number: delivery.number, error: "endpoint_disabled", outcome: .held),
                event: delivery.event, on: database)
            held.append(delivery)
            let event = republish ? health.map { OperationalEvent.endpointDisabled(delivery.endpoint, health: $0) } : nil
            prepared[index] = .finished(NotifyDecision.outcome(
                of: delivery.event, results: delivery.results, webhookSettled: false, also: event.map { [$0.message] } ?? []))
        }
        try deliveries.hold(events: held.map(\.event), on: database)
    }

    /// Record, for one answer that is not a settled delivery: the attempt (as ``NotifyDecision/Settlement/recorded(_:)``
    /// records it) and the outcome.
    /// The retry case is a returned failure, not a thrown one: its attempt record and hold must commit with the batch.
    private func complete(_ answered: Settling, database: PostgresConnection) throws -> Result<StageOutcome, StageFailure> {
        let delivery = answered.delivery
        let event = delivery.event
        try deliveries.record(answered.settlement.recorded(answered.attempt), event: event, on: database)
        switch answered.settlement {
        case .delivered, .refused:
            return .success(try finish(event, results: delivery.results, on: database))
        case .gone:
            if delivery.isMerchantWebhook {
                try deliveries.disableMerchantWebhook(event.merchantId, url: delivery.url, on: database)
            }
            return .success(try finish(event, results: delivery.results, on: database))
        case .held:
            try deliveries.hold(events: [delivery.event], on: database)
            return .success(NotifyDecision.outcome(
                of: delivery.event, results: delivery.results, webhookSettled: false, also: answered.disabledEvent.map { [$0.message] } ?? []))
        case .exhausted(let error):
            let exhausted = OperationalEvent.webhookExhausted(event, url: delivery.url, attempts: delivery.number, lastError: error, at: clock())
            return .success(try finish(event, results: delivery.results, on: database, also: [
                OutboundMessage.exhausted(delivery.message.inbound, after: Self.failed(delivery, error: error)), exhausted.message,
            ]))
        case .retry(let error, let delay):
            try deliveries.holdForRetry(event, seconds: delay, on: database)
            let failure = Self.failed(delivery, error: error)
            // The results event goes out now if the rule says so, with the retry copy the failure would have made.
            guard NotifyDecision.publishesResults(delivery.results, webhookSettled: false) else { return .failure(failure) }
            return .success(.publish([event.resultMessage, .retry(delivery.message.inbound, after: failure)]))
        }
    }

    /// A failed attempt as the runtime's retry policy sees it: retried through the tiers, or dead-lettered with it.
    private static func failed(_ delivery: Delivery, error: String) -> StageFailure {
        .transient(code: "webhook_failed", reason: "webhook attempt \(delivery.number) to \(endpointKey(delivery.url)) failed: \(error)")
    }

    /// One signed POST; fills the attempt's status code and latency. `trace`: the delivery's span, sent as the W3C
    /// `traceparent` (and `tracestate`) header so the merchant's endpoint can join the payment's trace.
    func post(_ body: [UInt8], id: String, to url: String, signer: WebhookSigner, client: HTTPClient, attempt: inout WebhookAttempt,
              trace: TraceContext? = nil) -> WebhookResponseClass {
        let timestamp = Int64(clock().timeIntervalSince1970)
        var headers = [HTTPHeader("content-type", "application/json"), HTTPHeader("user-agent", Self.userAgent)]
        headers += signer.headers(id: id, timestamp: timestamp, body: body).map { HTTPHeader($0.name, $0.value) }
        if let trace {
            headers.append(HTTPHeader(TraceContext.traceparentHeader, trace.traceparent))
            if let state = trace.state { headers.append(HTTPHeader(TraceContext.tracestateHeader, state)) }
        }
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

    /// Settles the event's webhook (``NotifyEventReader/settle(_:on:)``: the payment marked done, the operation or
    /// credential event notified) and publishes the results event as the rule says (plus `also`, e.g. a dead letter).
    private func finish(_ event: NotifyEvent, results: NotifyDecision.Results, on database: PostgresConnection, also: [OutboundMessage] = []) throws -> StageOutcome {
        try reader.settle(event, on: database)
        return NotifyDecision.outcome(of: event, results: results, webhookSettled: true, also: also)
    }

    /// `scheme://host:port` of a URL: the unit of the endpoint gate's concurrency slots, circuit and rate.
    public static func endpointKey(_ url: String) -> String {
        guard let components = URLComponents(string: url), let host = components.host else { return url }
        let scheme = components.scheme?.lowercased() ?? "http"
        return "\(scheme)://\(host.lowercased()):\(components.port ?? (scheme == "https" ? 443 : 80))"
    }
}
