import Foundation
import PaymentStages
import Pipeline
import Testing

/// The notify stage's decision tables, without services: what each message of a batch leads to, and what a
/// delivery's answer does.
@Suite struct NotifyDecisionTests {
    static let a = UUID()
    static let b = UUID()

    static func found(_ id: UUID, _ status: PaymentStatus = .authorized, done: Bool = false, hasEvent: Bool = true) -> NotifyDecision.Read {
        .found(paymentId: id, status: status, done: done, hasEvent: hasEvent)
    }

    @Test(arguments: [
        (found(a), NotifyDecision.Intake.deliver),
        (found(a, .declined, done: true), .republish),
        (found(a, .submitting, hasEvent: false), .notTerminal("payment \(a) is submitting")),
        (.missing, .unknownPayment),
        (.failed, .readFailed),
    ])
    func oneMessage(read: NotifyDecision.Read, expected: NotifyDecision.Intake) {
        #expect(NotifyDecision.intake([read]) == [expected])
    }

    /// Duplicates within a batch, as in the other stages: the first message for a payment decides, the later ones are
    /// already handled (one webhook per payment per batch), whatever the payment's state.
    @Test func theFirstMessageForAPaymentDecides() {
        let reads: [NotifyDecision.Read] = [
            Self.found(Self.a), .missing, Self.found(Self.b, done: true), Self.found(Self.a), .missing, Self.found(Self.b, done: true),
            Self.found(Self.a),
        ]
        #expect(NotifyDecision.intake(reads) == [
            .deliver, .unknownPayment, .republish, .alreadyHandled(by: 0), .unknownPayment, .alreadyHandled(by: 2), .alreadyHandled(by: 0),
        ])
    }

    @Test func aReadFailureDecidesNothingForThePayment() {
        #expect(NotifyDecision.intake([.failed, Self.found(Self.a)]) == [.readFailed, .deliver])
    }

    @Test func aDeliveryToADisabledEndpointIsHeldAndOnlyARedeliveryRepublishesTheDisabling() {
        #expect(NotifyDecision.dispatch(endpointDisabled: false, redelivered: false) == .send)
        #expect(NotifyDecision.dispatch(endpointDisabled: false, redelivered: true) == .send)
        #expect(NotifyDecision.dispatch(endpointDisabled: true, redelivered: false) == .hold(republishDisabled: false))
        #expect(NotifyDecision.dispatch(endpointDisabled: true, redelivered: true) == .hold(republishDisabled: true))
    }

    @Test func aDeliveryTheGateHeldBackIsRecordedWithItsCode() {
        #expect(NotifyDecision.error(.circuitOpen) == "circuit_open")
        #expect(NotifyDecision.error(.rateLimited) == "rate_limited")
        #expect(NotifyDecision.error(.busy) == "endpoint_busy")
    }

    static let retry = RetrySchedule.Decision.retry(tier: 1, delay: 300)

    @Test(arguments: [
        (WebhookResponseClass.delivered, false, retry, NotifyDecision.Settlement.delivered),
        (.delivered, true, .exhausted, .delivered),
        (.gone, false, retry, .gone),
        (.refused(error: "ssrf_refused: x"), true, .exhausted, .refused(error: "ssrf_refused: x")),
        (.retry(error: "http_500"), false, retry, .retry(error: "http_500", delay: 300)),
        (.retry(error: "http_500"), false, .exhausted, .exhausted(error: "http_500")),
        // An endpoint its batch disabled holds the delivery, even on the last attempt: no retry, no exhaustion.
        (.retry(error: "timeout"), true, retry, .held(error: "timeout")),
        (.retry(error: "timeout"), true, .exhausted, .held(error: "timeout")),
    ])
    func settlement(answer: WebhookResponseClass, disabled: Bool, retry: RetrySchedule.Decision, expected: NotifyDecision.Settlement) {
        #expect(NotifyDecision.settle(answer, endpointDisabled: disabled, retry: retry) == expected)
    }

    /// `PAYPIPE_RESULTS_TIMING`: `webhook` publishes exactly when the webhook settles; `outcome` with the first
    /// decision on the event whatever the webhook's fate, and never from a webhook retry's copy, except where the
    /// message may be repeating its own lost publication (the hand-off itself, a broker redelivery).
    @Test(arguments: [
        // timing, attempted before, previous retries, redelivered, webhook settled → published
        (ResultsTiming.webhook, false, 0, false, true, true),
        (.webhook, false, 0, false, false, false),
        (.webhook, true, 3, false, true, true),
        (.webhook, true, 3, true, false, false),
        (.outcome, false, 0, false, false, true),
        (.outcome, false, 2, false, false, true),
        (.outcome, true, 0, false, false, true),
        (.outcome, true, 2, false, false, false),
        (.outcome, true, 2, false, true, false),
        (.outcome, true, 2, true, true, true),
        (.outcome, true, 2, true, false, true),
    ])
    func resultsPublication(timing: ResultsTiming, attempted: Bool, previousRetries: Int, redelivered: Bool, settled: Bool, expected: Bool) {
        let results = NotifyDecision.Results(timing: timing, attempted: attempted, previousRetries: previousRetries, redelivered: redelivered)
        #expect(NotifyDecision.publishesResults(results, webhookSettled: settled) == expected)
    }

    /// An operation's event and its payment's result are different events: both first messages decide.
    @Test func anOperationEventAndItsPaymentsResultAreDecidedApart() {
        let reads: [NotifyDecision.Read] = [
            .found(.operation(4), settled: false, hasEvent: true, pending: "operation op-4 is succeeded"), Self.found(Self.a),
            .found(.operation(4), settled: false, hasEvent: true, pending: ""),
            .found(.operation(5), settled: false, hasEvent: false, pending: "operation op-5 is requested"),
            .found(.operation(6), settled: true, hasEvent: true, pending: ""),
        ]
        #expect(NotifyDecision.intake(reads) == [.deliver, .deliver, .alreadyHandled(by: 0), .notTerminal("operation op-5 is requested"), .republish])
    }
}
