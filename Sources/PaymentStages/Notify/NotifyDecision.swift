import Foundation
import HTTP
import Pipeline

/// The notify stage's decisions as pure functions (no database, no broker, no HTTP): which messages of a batch lead
/// to a delivery, and what a delivery's answer does. `NotifyStage` reads the batch, carries the decisions out and
/// records them; `NotifyDecisionTests` cover every row of both tables without services.
public enum NotifyDecision {
    /// What phase 1 read for one message.
    public enum Read: Sendable, Equatable {
        /// The read failed for this message (its row did not decode).
        case failed
        /// No such payment (or operation).
        case missing
        /// `settled`: its webhook was settled before (the payment `done`, the operation notified); `hasEvent`: there is
        /// an event to notify (the payment terminal, the operation finished); `pending`: what it is otherwise.
        case found(NotifyRequest, settled: Bool, hasEvent: Bool, pending: String)

        /// A payment's result as read.
        public static func found(paymentId: UUID, status: PaymentStatus, done: Bool, hasEvent: Bool) -> Read {
            .found(.payment(paymentId), settled: done, hasEvent: hasEvent, pending: "payment \(paymentId) is \(status.rawValue)")
        }

        /// What prepare read (``NotifyEventReader``) for `request`, as the decisions see it.
        init(_ loaded: Result<NotifyRead?, any Error>, request: NotifyRequest) {
            guard case .success(let read) = loaded else { self = .failed; return }
            guard let read else { self = .missing; return }
            self = .found(request, settled: read.settled, hasEvent: read.event != nil, pending: read.pending)
        }
    }

    /// A later message for an event its batch's first message decided (``Intake/alreadyHandled(by:)``): nothing is
    /// sent for it. If the first message published the results event, it is published again (same id, consumers
    /// dedupe), as a message for a settled event may; an unknown payment is unknown for it too; otherwise (a retry, a
    /// hold, a failure) the first message carries the event on alone.
    public static func alreadyHandled(after first: Result<StageOutcome, StageFailure>) -> Result<StageOutcome, StageFailure> {
        switch first {
        case .failure(.unattributable(let code, let reason)): return .failure(.unattributable(code: code, reason: reason))
        case .success(.publish(let messages)):
            let result = messages.first { message in
                guard case .event(ResultsExchange.name, let type, _, _, _, _, _, _, _) = message else { return false }
                return OperationalEvent.Kind(rawValue: type) == nil
            }
            return .success(result.map { .publish([$0]) } ?? .completed)
        default: return .success(.completed)
        }
    }

    /// What to do with one message before any request.
    public enum Intake: Sendable, Equatable {
        /// The read failed: the error is the message's result.
        case readFailed
        /// `unknown_payment` (unattributable).
        case unknownPayment
        /// The webhook was settled before (stage `done`, operation notified): never send it again; the results event
        /// again as ``NotifyDecision/publishesResults(_:webhookSettled:)`` decides (same id, consumers dedupe).
        case republish
        /// Not final yet (a hand-off that overtook its commit): retry later. The reason names the state.
        case notTerminal(String)
        /// The request's first message in the batch: build, sign and (target permitting) deliver its event.
        case deliver
        /// A later message for a request an earlier message of this batch decides: already handled, nothing is sent
        /// for it. `by` is the index of that earlier message.
        case alreadyHandled(by: Int)
    }

    /// One decision per read, in order. As in the other stages, the first message for a payment (or operation) decides
    /// and the later ones are already handled, whatever its state: one webhook per event per batch.
    public static func intake(_ reads: [Read]) -> [Intake] {
        let found = reads.map { read -> NotifyRequest? in
            guard case .found(let request, _, _, _) = read else { return nil }
            return request
        }
        let earlier = firstMessages(found)
        return reads.enumerated().map { index, read in
            guard case .found(_, let settled, let hasEvent, let pending) = read else {
                return read == .missing ? .unknownPayment : .readFailed
            }
            if let earlier = earlier[index] { return .alreadyHandled(by: earlier) }
            if settled { return .republish }
            return hasEvent ? .deliver : .notTerminal(pending)
        }
    }

    /// When a message's handling publishes the event on `paypipe.results` (besides its webhook).
    public struct Results: Sendable, Equatable {
        /// `PAYPIPE_RESULTS_TIMING`.
        public var timing: ResultsTiming
        /// A webhook attempt of this event is recorded: an earlier message decided on it (and, at `outcome`, published it).
        public var attempted: Bool
        /// The message is the hand-off itself (no retry tier yet) or a broker redelivery: an earlier handling of this
        /// very message may have committed its publication without the broker ever getting it (a crash before the
        /// confirm, a commit whose answer was lost), so it publishes again (same `message_id`).
        public var mayRepeat: Bool

        public init(timing: ResultsTiming, attempted: Bool, mayRepeat: Bool) {
            (self.timing, self.attempted, self.mayRepeat) = (timing, attempted, mayRepeat)
        }

        public init(timing: ResultsTiming, attempted: Bool, previousRetries: Int, redelivered: Bool) {
            self.init(timing: timing, attempted: attempted, mayRepeat: previousRetries == 0 || redelivered)
        }
    }

    /// Whether the outcome of a message carries the results event. `webhookSettled`: the outcome settles the webhook
    /// (delivered, gone, refused, exhausted, nothing to send, or settled before).
    /// - `webhook` timing: exactly when the webhook settles (a settled one is published again by every later message,
    ///   which may be the redelivery of the one whose publication was lost).
    /// - `outcome` timing: with the first decision on the event, whatever the webhook's fate (a retry, a hold), and
    ///   again only by a message that may repeat its own earlier publication; never by a webhook retry's copy.
    public static func publishesResults(_ results: Results, webhookSettled: Bool) -> Bool {
        switch results.timing {
        case .webhook: webhookSettled
        case .outcome: !results.attempted || results.mayRepeat
        }
    }

    /// The outcome of an event's round: `also`, with the results event first when ``publishesResults(_:webhookSettled:)``
    /// says so; nothing to publish is `.completed`.
    public static func outcome(of event: NotifyEvent, results: Results, webhookSettled: Bool, also: [OutboundMessage] = []) -> StageOutcome {
        let messages = (publishesResults(results, webhookSettled: webhookSettled) ? [event.resultMessage] : []) + also
        return messages.isEmpty ? .completed : .publish(messages)
    }

    /// The one duplicate rule: per message, `nil` if it is its payment's first in the batch, else the index of that
    /// first message (which decides for both). A `nil` key is never a duplicate.
    public static func firstMessages<Key: Hashable>(_ keys: [Key?]) -> [Int?] {
        var first: [Key: Int] = [:]
        return keys.enumerated().map { index, id in
            guard let id else { return nil }
            if let earlier = first[id] { return earlier }
            first[id] = index
            return nil
        }
    }

    /// Whether a delivery ready to be sent goes out.
    public enum Dispatch: Sendable, Equatable {
        case send
        /// Its endpoint is disabled: recorded `held` (`endpoint_disabled`), the payment parked, nothing sent.
        /// `republishDisabled`: publish the endpoint's `endpoint.disabled` event again.
        case hold(republishDisabled: Bool)
    }

    /// A delivery to a disabled endpoint is held. Only a broker redelivery publishes `endpoint.disabled` again: it may
    /// be the very delivery whose batch disabled the endpoint and crashed before publishing it (same id: consumers
    /// dedupe). Fresh deliveries and retry-tier copies do not, or every held delivery would repeat the event.
    public static func dispatch(endpointDisabled: Bool, redelivered: Bool) -> Dispatch {
        endpointDisabled ? .hold(republishDisabled: redelivered) : .send
    }

    /// The recorded error of a delivery the endpoint gate held back (`webhook_deliveries.error`, failure codes): a
    /// retry like any failed attempt, but not a failure of the endpoint (its health and circuit never see it).
    public static func error(_ refusal: EndpointGate.Refusal) -> String {
        switch refusal {
        case .circuitOpen: "circuit_open"
        case .rateLimited: "rate_limited"
        case .busy: "endpoint_busy"
        }
    }

    /// What an answered (or held back) delivery does.
    public enum Settlement: Sendable, Equatable {
        /// 2xx: recorded `delivered`, the payment done, the results event published.
        case delivered
        /// 410: recorded `disabled`; a merchant's configured webhook is switched off; the payment done, published.
        case gone
        /// A final answer that is not a delivery (SSRF refusal of the connected address): recorded `failed`, done,
        /// published.
        case refused(error: String)
        /// The batch disabled the endpoint: recorded `held`, the payment parked until an operator re-enables it; no
        /// retry and no exhaustion.
        case held(error: String)
        /// Recorded `retrying`; the message goes to the retry tier with this delay.
        case retry(error: String, delay: Double)
        /// The last allowed attempt failed: recorded `failed`, the payment done, the results event published with
        /// the dead letter (`retries_exhausted`) and `webhook.exhausted`.
        case exhausted(error: String)

        /// The attempt as `webhook_deliveries` records it: its outcome and error as the case above says.
        public func recorded(_ sent: WebhookAttempt) -> WebhookAttempt {
            var attempt = sent
            switch self {
            case .delivered: return sent.asDelivered
            case .gone: (attempt.outcome, attempt.error) = (.disabled, "endpoint_gone")
            case .refused(let error), .exhausted(let error): (attempt.outcome, attempt.error) = (.failed, error)
            case .held(let error): (attempt.outcome, attempt.error) = (.held, error)
            case .retry(let error, _): attempt.error = error
            }
            return attempt
        }
    }

    /// - Parameters:
    ///   - endpointDisabled: this batch's answers disabled the delivery's endpoint.
    ///   - retry: the retry schedule's decision for the message (``WorkerRuntime/RetrySchedule/decision(previousRetries:)``).
    public static func settle(_ answer: WebhookResponseClass, endpointDisabled: Bool, retry: RetrySchedule.Decision) -> Settlement {
        switch answer {
        case .delivered: return .delivered
        case .gone: return .gone
        case .refused(let error): return .refused(error: error)
        case .retry(let error):
            if endpointDisabled { return .held(error: error) }
            guard case .retry(_, let delay) = retry else { return .exhausted(error: error) }
            return .retry(error: error, delay: delay)
        }
    }
}

/// How the notify stage treats the result of one POST (Standard Webhooks §"Delivery"): 2xx is success, 410 disables
/// the endpoint, everything else — 3xx (redirects are not followed), 4xx, 429/502/504 throttling, 5xx, timeouts and
/// connection failures — is retried on the schedule.
public enum WebhookResponseClass: Sendable, Equatable {
    case delivered
    case gone
    /// The SSRF check of the connected address refused the POST before any byte was sent (DNS rebinding): final, like
    /// the guard's own refusal. `error` is `ssrf_refused: …`.
    case refused(error: String)
    /// `error` is what `webhook_deliveries.error` records, e.g. `http_503 retry-after=30s` or `timeout`.
    case retry(error: String)

    var isRetry: Bool {
        if case .retry = self { return true }
        return false
    }

    public static func classify(status: Int, retryAfter: String?) -> WebhookResponseClass {
        switch status {
        case 200...299: return .delivered
        case 410: return .gone
        default:
            var error = "http_\(status)"
            // RetryAfter clamps to a day, so the conversion cannot trap whatever the endpoint sent.
            if let seconds = RetryAfter.seconds(retryAfter) { error += " retry-after=\(Int(seconds.rounded(.down)))s" }
            return .retry(error: error)
        }
    }

    public static func classify(_ failure: HTTPClientError) -> WebhookResponseClass {
        switch failure {
        case .timedOut: .retry(error: "timeout")
        case .couldNotConnect: .retry(error: "connect_failed")
        case .connectionReset: .retry(error: "connection_reset")
        case .tls: .retry(error: "tls_failed")
        case .tooLarge: .retry(error: "response_too_large")
        case .invalidRequest: .retry(error: "invalid_request")
        // Notify's only send gate is the SSRF check of the connected address (WebhookURLGuard.sendGate).
        case .refusedBeforeSending(let reason): .refused(error: "ssrf_refused: \(reason)")
        case .other(let code, _): .retry(error: "curl_\(code)")
        }
    }
}

/// A POST's answer (or the endpoint gate's refusal to send it), as the notify stage records it.
public struct WebhookAnswer: Sendable {
    let classification: WebhookResponseClass
    let attempt: WebhookAttempt
    /// When the answer came, if a request was sent (not refused by the gate): what endpoint health goes by.
    let answeredAt: Date?

    /// What the answer tells `endpoint`'s health (``EndpointObservation``): only answers count (a 2xx, or a failure
    /// that will be retried); the worker's own refusals and final answers (410, SSRF) tell nothing.
    func observation(of endpoint: WebhookEndpoint) -> EndpointObservation? {
        guard let at = answeredAt else { return nil }
        switch classification {
        case .delivered: return EndpointObservation(endpoint: endpoint, at: at, error: nil)
        case .retry(let error): return EndpointObservation(endpoint: endpoint, at: at, error: error)
        case .gone, .refused: return nil
        }
    }
}
