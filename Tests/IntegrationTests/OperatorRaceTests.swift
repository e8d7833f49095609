import AMQP
import Foundation
import JSON
import PaymentStages
import Pipeline
import Postgres
import Testing

extension Integration {
    /// Operator actions that run while workers are busy: each is safe under the same guards as the workers.
    @Suite struct OperatorRaceTests {
        /// `paypipe payment resolve` while the `needs_review` webhook is in flight (a slow receiver): notify marks the
        /// payment done only for the status it delivered, so the resolved status is still delivered.
        @Test func resolvingDuringAnInFlightReviewWebhookStillDeliversTheResolvedStatus() throws {
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            let receiver = try WebhookTestReceiver(secret: NotifyHarness.secret)
            defer { receiver.stop() }
            try harness.applyMerchant(webhookURL: receiver.url)
            let runtime = try harness.startedRuntime()
            defer { runtime.stopAndWait() }
            receiver.respond(after: 1.5)
            let message = try harness.insertPayment(status: .needsReview)
            try harness.publish([message])
            try TestServices.eventually(timeout: 10, "the needs_review webhook is in flight") { receiver.requests.count == 1 }
            let database = try harness.database()
            defer { database.close() }
            let handOff = try PaymentResolution(paymentId: message.paymentId, as: "authorized", reason: "captured in back office", actor: "ops")
                .apply(on: database)
            receiver.respond(after: 0)
            // The resolution's hand-off is handled only after the in-flight delivery settled (one busy lane): that
            // settlement must not mark the payment done for a status it did not deliver.
            try TestServices.eventually(timeout: 10, "the needs_review delivery recorded") { try !harness.deliveries(message.paymentId).isEmpty }
            try harness.publish([handOff])
            try TestServices.eventually(timeout: 20, "the resolved status delivered") {
                receiver.requests.contains { (try? JSONValue.parse($0.body))?["type"]?.stringValue == "payment.authorized" }
            }
            try harness.waitDone(message.paymentId)
            let types = receiver.requests.compactMap { (try? JSONValue.parse($0.body))?["type"]?.stringValue }
            #expect(types.first == "payment.needs_review")
            #expect(types.contains("payment.authorized"))
        }

        /// `dlq replay` of a submit message for a `submitting` payment whose AUTH may still be in flight changes
        /// nothing: no call, no attempt, no transition.
        @Test func replayingASubmitMessageForASubmittingPaymentChangesNothing() throws {
            let harness = try SubmitHarness()
            defer { harness.tearDown() }
            let (message, order) = try SubmitStageTests.crashedAfterSending(harness, amount: 1000, sent: false)
            let before = try harness.attempts(message.paymentId)
            let events = try harness.authorize.events(message.paymentId)
            let result = try harness.process(harness.makeStage(), message)
            #expect(SubmitStageTests.transientCode(result) == "awaiting_reconciliation")
            #expect(try harness.attempts(message.paymentId) == before)
            #expect(try harness.authorize.events(message.paymentId) == events)
            #expect(try harness.payment(message.paymentId).status == .submitting)
            #expect(try harness.authCount(order) == 0)
        }

        /// `paypipe reconcile --stuck-after` below the reconciliation time is refused (today 0 is accepted).
        @Test("reconcile refuses a --stuck-after below the reconciliation time", arguments: ["0", "30s"])
        func reconcileRefusesTooShortAThreshold(value: String) throws {
            let result = try ChildProcess.runCapturingOutput(PipelineProcesses.binary("paypipe"), ["reconcile", "--stuck-after", value], environment: [
                "PAYPIPE_ENV": "sandbox", "PAYPIPE_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
                "PAYPIPE_AMQP_URL": "amqp://guest:guest@127.0.0.1:1/%2f",
            ])
            #expect(result.status == 64, "exit \(result.status): \(result.text)")
            #expect(result.text.contains("reconciliation time"))
        }
    }
}
