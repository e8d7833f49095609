import AMQP
import Foundation
import PaymentStages
import Pipeline
import Testing

extension Integration {
/// Issue 46, item 1 (notify's part): the outcome event reaches `paypipe.results` as soon as notify has the final
/// outcome, whatever the merchant endpoint does; the webhook keeps its own retries; one results message per event.
/// `PAYPIPE_RESULTS_TIMING=webhook` keeps the earlier rule (published once the webhook settles).
@Suite struct ResultsTimingTests {
    /// Payment results (not operational events) that arrived on the harness's results queue so far.
    static func paymentResults(_ harness: NotifyHarness) throws -> [AMQPDelivery] {
        try harness.drain(harness.resultsQueue).filter { $0.routingKey.hasPrefix("payment.") }
    }

    @Test func aFailingEndpointDoesNotHoldBackTheResult() throws {
        let harness = try NotifyHarness(maxRetries: 50)
        defer { harness.tearDown() }
        let receiver = try harness.appliedReceiver(answering: 503)
        defer { receiver.stop() }
        let runtime = try harness.startedRuntime(harness.makeStage(gate: Integration.WebhookEndpointHealthTests.openGate()))
        defer { runtime.stopAndWait() }
        let payment = try harness.insertPayment(status: .authorized)
        try harness.publish([payment])

        var results: [AMQPDelivery] = []
        try TestServices.eventually(timeout: 30, "the result on paypipe.results while the endpoint fails") {
            results += try Self.paymentResults(harness)
            return !results.isEmpty
        }
        // The webhook keeps retrying on its own; its retries publish no second result.
        try TestServices.eventually(timeout: 30, "three failed webhook attempts") { try harness.deliveries(payment.paymentId).count >= 3 }
        results += try Self.paymentResults(harness)
        let eventId = PaymentEvent.id(paymentId: payment.paymentId, type: .authorized)
        #expect(results.map(\.routingKey) == ["payment.authorized"])
        #expect(results.first?.properties.messageId == eventId)
        #expect(try harness.stage(of: payment.paymentId) == .notify, "the webhook is not settled")
        let attempts = try harness.deliveries(payment.paymentId)
        #expect(attempts.allSatisfy { $0.outcome == "retrying" && $0.eventId == eventId })
        #expect(receiver.requests.allSatisfy { $0.verified })

        // Once the endpoint answers, the webhook settles and still no second result is published.
        receiver.script([], then: 204)
        try harness.waitDone(payment.paymentId, timeout: 30)
        runtime.stopAndWait()
        #expect(try Self.paymentResults(harness).isEmpty)
        #expect(try harness.deliveries(payment.paymentId).last?.outcome == "delivered")
    }

    @Test func withTimingWebhookTheResultWaitsForTheWebhook() throws {
        let harness = try NotifyHarness(maxRetries: 50)
        defer { harness.tearDown() }
        let receiver = try harness.appliedReceiver(answering: 503)
        defer { receiver.stop() }
        let runtime = try harness.startedRuntime(harness.makeStage(gate: Integration.WebhookEndpointHealthTests.openGate(), resultsTiming: .webhook))
        defer { runtime.stopAndWait() }
        let payment = try harness.insertPayment(status: .declined)
        try harness.publish([payment])
        try TestServices.eventually(timeout: 30, "three failed webhook attempts") { try harness.deliveries(payment.paymentId).count >= 3 }
        var results = try Self.paymentResults(harness)
        #expect(results.isEmpty, "no result before the webhook settles")
        receiver.script([], then: 204)
        try harness.waitDone(payment.paymentId, timeout: 30)
        try TestServices.eventually(timeout: 30, "the result once the webhook settled") {
            results += try Self.paymentResults(harness)
            return !results.isEmpty
        }
        runtime.stopAndWait()
        results += try Self.paymentResults(harness)
        #expect(results.map(\.routingKey) == ["payment.declined"])
        #expect(results.first?.properties.messageId == PaymentEvent.id(paymentId: payment.paymentId, type: .declined))
    }
}
}
