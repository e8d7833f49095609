import AMQP
import Foundation
import JSON
import PaymentStages
import Pipeline
import Testing

extension Integration {
    /// Endpoints that fail for long: disabling (shared state in PostgreSQL), held deliveries, the operational events
    /// on `paypipe.results`, `paypipe webhooks endpoints [enable]`, and the per-endpoint rate limit. Real RabbitMQ,
    /// PostgreSQL and a real HTTP receiver scripted to fail.
    @Suite struct WebhookEndpointHealthTests {
        /// A gate whose breaker never opens: every retry reaches the receiver, so the failing period is observed
        /// at the retry tiers' pace (300 ms) rather than the breaker's.
        static func openGate(maxWait: Double = 5) -> EndpointGate {
            EndpointGate(policy: EndpointGatePolicy(failureThreshold: 1000, maxWait: maxWait), stage: .notify)
        }

        /// The stage most tests here run: the open gate, results once the webhook settles (so that `paypipe.results`
        /// shows the endpoint's events alone; the results timing has its own suite, ResultsTimingTests), `disableAfter`.
        func healthStage(_ harness: NotifyHarness, disableAfter: Double) -> NotifyStage {
            harness.makeStage(gate: Self.openGate(), healthPolicy: EndpointHealthPolicy(disableAfter: disableAfter), resultsTiming: .webhook)
        }

        func endpoints(_ harness: NotifyHarness) throws -> [WebhookEndpointStore.Row] {
            let database = try harness.database()
            defer { database.close() }
            return try WebhookEndpointStore().list(on: database)
        }

        /// With jsonschema available, `body` matches docs/schemas/operational-event.schema.json.
        func expectMatchesSchema(_ body: [UInt8]) throws {
            guard (try? ChildProcess.run("/usr/bin/env", ["python3", "-c", "import jsonschema"])) == 0 else { return }
            let schema = ContractTests.packageRoot.appendingPathComponent("docs/schemas/operational-event.schema.json").path
            let file = try ContractTests.temporaryFile(body)
            defer { try? FileManager.default.removeItem(at: file) }
            let script = "import json, sys, jsonschema; jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))"
            let output = try ContractTests.python(["-c", script, schema, file.path])
            #expect(output.status == 0, "\(output.text)")
        }

        @Test func anEndpointFailingLongerThanThePeriodIsDisabledHoldsDeliveriesAndIsReEnabledByTheCLI() throws {
            let harness = try NotifyHarness(maxRetries: 50, concurrency: 2)
            defer { harness.tearDown() }
            let receiver = try harness.appliedReceiver(answering: 503)
            defer { receiver.stop() }
            let runtime = try harness.startedRuntime(healthStage(harness, disableAfter: 1.5))
            defer { runtime.stopAndWait() }

            let first = try harness.insertPayment(status: .authorized)
            try harness.publish([first])
            try TestServices.eventually(timeout: 30, "endpoint disabled") { try endpoints(harness).first?.health.isDisabled == true }
            let row = try #require(try endpoints(harness).first)
            #expect(row.endpoint == WebhookEndpoint(merchantId: "m-notify", url: receiver.url))
            #expect(row.health.disabledReason == "failing_continuously")
            #expect(row.health.lastError == "http_503")
            let failingSince = try #require(row.health.failingSince)
            #expect(try #require(row.health.disabledAt).timeIntervalSince(failingSince) >= 1.5)

            // The event, and no payment result: nothing was delivered.
            let events = try harness.results("endpoint.disabled on paypipe.results") { $0.contains { $0.routingKey == "endpoint.disabled" } }
            #expect(events.map(\.routingKey) == ["endpoint.disabled"])
            let event = try JSONValue.parse(try #require(events.first).body)
            #expect(event["data"]?["merchantId"]?.stringValue == "m-notify")
            #expect(event["data"]?["url"]?.stringValue == receiver.url)
            #expect(event["data"]?["reason"]?.stringValue == "failing_continuously")
            #expect(events.first?.properties.messageId == event["data"]?["id"]?.stringValue)
            try expectMatchesSchema(try #require(events.first).body)

            // Held, not dropped and not marked notified; the reconciler's backlog leaves it out.
            #expect(try harness.stage(of: first.paymentId) == .notify)
            #expect(try harness.deliveries(first.paymentId).last?.outcome == "held")
            let database = try harness.database()
            defer { database.close() }
            let backlog = try Reconciler(stage: .notify, stuckAfterSeconds: 0).backlog(on: database)
            #expect(backlog.stuck == 0 && backlog.oldestAgeSeconds == 0)

            // A new delivery to the disabled endpoint is held without a request.
            let requestsBefore = receiver.requests.count
            let second = try harness.insertPayment(status: .declined)
            try harness.publish([second])
            try TestServices.eventually("second delivery held") { try harness.deliveries(second.paymentId).map(\.outcome) == ["held"] }
            #expect(receiver.requests.count == requestsBefore)
            #expect(try harness.deliveries(second.paymentId).first?.error == "endpoint_disabled")

            // The CLI lists it, then re-enables it; both held deliveries arrive, with their results events.
            let listed = try harness.paypipe(["webhooks", "endpoints", "--disabled"])
            #expect(listed.status == 0, "\(listed.text)")
            let line = try JSONValue.parse(Array(try #require(listed.text.split(separator: "\n").first).utf8))
            #expect(line["merchant"]?.stringValue == "m-notify")
            #expect(line["state"]?.stringValue == "disabled")
            #expect(line["host"]?.stringValue == NotifyStage.endpointKey(receiver.url))
            #expect(line["heldDeliveries"]?.int64Value == 2)
            #expect(line["reason"]?.stringValue == "failing_continuously")
            #expect(line["disabledAt"]?.stringValue != nil && line["failingSince"]?.stringValue != nil)

            receiver.script([], then: 204)
            let enabled = try harness.paypipe(["webhooks", "endpoints", "enable", "m-notify"])
            #expect(enabled.status == 0, "\(enabled.text)")
            #expect(enabled.text.contains("re-delivering 2 held deliveries"))
            try harness.waitDone(first.paymentId)
            try harness.waitDone(second.paymentId)
            let delivered = receiver.requests.filter(\.verified).suffix(2).compactMap { $0.header("webhook-id") }
            #expect(Set(delivered) == [PaymentEvent.id(paymentId: first.paymentId, type: .authorized),
                                       PaymentEvent.id(paymentId: second.paymentId, type: .declined)])
            let payments = try harness.results("both results events") { $0.filter { $0.routingKey.hasPrefix("payment.") }.count >= 2 }
            #expect(Set(payments.map(\.routingKey)) == ["payment.authorized", "payment.declined"])
            let after = try #require(try endpoints(harness).first)
            #expect(!after.health.isDisabled && after.health.failingSince == nil)

            // Nothing left to enable: exit 65.
            #expect(try harness.paypipe(["webhooks", "endpoints", "enable", "m-notify"]).status == 65)
        }

        /// Health is recorded as before now that successes on endpoints without a row skip it: a failing endpoint gets
        /// its row, a success clears `failing_since` (its batch saw the row in prepare, so it takes the locked path),
        /// and failures going on for the period from there disable it. Two runtimes, so that no timing decides which
        /// policy a failure meets: the recovery under a period of an hour, the disabling under 1.5 s.
        @Test func aFailingEndpointIsMarkedRecoversAndIsDisabledAsBefore() throws {
            let harness = try NotifyHarness(maxRetries: 50, concurrency: 1)
            defer { harness.tearDown() }
            let receiver = try harness.appliedReceiver(answering: 204)
            defer { receiver.stop() }

            // Healthy: delivered, and no row.
            var runtime = try harness.startedRuntime(healthStage(harness, disableAfter: 3600))
            let healthy = try harness.insertPayment(status: .authorized)
            try harness.publish([healthy])
            try harness.waitDone(healthy.paymentId)
            #expect(try endpoints(harness).isEmpty, "a success on an endpoint without a row writes nothing")

            // Two failures, then a success: marked failing, then recovered.
            receiver.script([503, 503], then: 204)
            let recovering = try harness.insertPayment(status: .authorized)
            try harness.publish([recovering])
            try harness.waitDone(recovering.paymentId)
            #expect(try harness.deliveries(recovering.paymentId).map(\.outcome) == ["retrying", "retrying", "delivered"])
            let recovered = try #require(try endpoints(harness).first)
            #expect(recovered.health.failingSince == nil, "the success cleared the failing period")
            #expect(recovered.health.lastError == "http_503")
            let lastFailure = try #require(recovered.health.lastFailureAt)
            let lastSuccess = try #require(recovered.health.lastSuccessAt)
            #expect(lastSuccess >= lastFailure)
            #expect(!recovered.health.isDisabled)
            runtime.stopAndWait()

            // Failing again for the period: disabled, the period counted from the first failure after the recovery.
            receiver.script([], then: 503)
            runtime = try harness.startedRuntime(healthStage(harness, disableAfter: 1.5))
            defer { runtime.stopAndWait() }
            let failing = try harness.insertPayment(status: .declined)
            try harness.publish([failing])
            try TestServices.eventually(timeout: 30, "endpoint disabled") { try endpoints(harness).first?.health.isDisabled == true }
            let disabled = try #require(try endpoints(harness).first)
            #expect(disabled.health.disabledReason == EndpointHealthPolicy.failingReason)
            let failingSince = try #require(disabled.health.failingSince)
            #expect(failingSince > lastSuccess)
            #expect(try #require(disabled.health.disabledAt).timeIntervalSince(failingSince) >= 1.5)
            try TestServices.eventually("the failing delivery held") { try harness.deliveries(failing.paymentId).last?.outcome == "held" }
        }

        /// The worker that disabled the endpoint "crashes" after its commit, before publishing: the broker's redelivery
        /// to the next worker is held and publishes `endpoint.disabled` (same id) after all.
        @Test func aCrashBeforePublishingEndpointDisabledIsMadeUpByTheRedelivery() throws {
            let harness = try NotifyHarness(maxRetries: 50, concurrency: 1)
            defer { harness.tearDown() }
            let receiver = try harness.appliedReceiver(answering: 503)
            defer { receiver.stop() }
            let policy = EndpointHealthPolicy(disableAfter: 1)
            let isDisabled: @Sendable () -> Bool = {
                guard let database = try? harness.database() else { return false }
                defer { database.close() }
                return (try? WebhookEndpointStore().list(disabledOnly: true, on: database).isEmpty) == false
            }
            let crashing = try harness.startedRuntime(
                harness.makeStage(gate: Self.openGate(), healthPolicy: policy, resultsTiming: .webhook),
                hooks: RuntimeHooks(afterCommit: { if isDisabled() { throw TestFailure("simulated crash") } }))
            let message = try harness.insertPayment(status: .authorized)
            try harness.publish([message])
            try TestServices.eventually(timeout: 30, "endpoint disabled") { isDisabled() }
            crashing.stopAndWait()
            #expect(try harness.drain(harness.resultsQueue).isEmpty, "the crash came before the publication")
            let healthy = try harness.startedRuntime(harness.makeStage(gate: Self.openGate(), healthPolicy: policy, resultsTiming: .webhook))
            defer { healthy.stopAndWait() }
            let events = try harness.results("endpoint.disabled after the redelivery") { !$0.isEmpty }
            #expect(events.map(\.routingKey) == ["endpoint.disabled"])
            #expect(try harness.stage(of: message.paymentId) == .notify)
            #expect(try harness.deliveries(message.paymentId).last?.outcome == "held")
        }

        @Test func aDeliveryThatRunsOutOfAttemptsPublishesWebhookExhausted() throws {
            let harness = try NotifyHarness(maxRetries: 1, concurrency: 1)
            defer { harness.tearDown() }
            let receiver = try harness.appliedReceiver(answering: 500)
            defer { receiver.stop() }
            let runtime = try harness.startedRuntime()
            defer { runtime.stopAndWait() }
            let message = try harness.insertPayment(status: .authorized)
            try harness.publish([message])
            try harness.waitDone(message.paymentId)
            let seen = try harness.results("result and webhook.exhausted") { $0.count >= 2 }
            #expect(Set(seen.map(\.routingKey)) == ["payment.authorized", "webhook.exhausted"])
            let exhausted = try JSONValue.parse(try #require(seen.first { $0.routingKey == "webhook.exhausted" }).body)
            #expect(exhausted["data"]?["paymentId"]?.stringValue == message.paymentId.uuidString.lowercased())
            #expect(exhausted["data"]?["eventId"]?.stringValue == PaymentEvent.id(paymentId: message.paymentId, type: .authorized))
            #expect(exhausted["data"]?["attempts"]?.int64Value == 2)
            #expect(exhausted["data"]?["lastError"]?.stringValue == "http_500")
            try expectMatchesSchema(try #require(seen.first { $0.routingKey == "webhook.exhausted" }).body)
            #expect(try harness.drain(Stage.notify.deadLetterQueueName).count == 1, "the exhausted delivery is dead-lettered too")
        }

        /// The merchant's `webhook.ratePerSecond` (0.5/s, one-token burst) applies although `PAYPIPE_WEBHOOK_RATE` is
        /// off: of two deliveries at once, one is held back (`rate_limited`, not sent, not an endpoint failure) and
        /// goes out on a later retry.
        @Test func theMerchantsRateLimitHoldsBackRequestsBeyondIt() throws {
            let harness = try NotifyHarness(maxRetries: 30, concurrency: 1)
            defer { harness.tearDown() }
            let receiver = try WebhookTestReceiver(secret: NotifyHarness.secret)
            defer { receiver.stop() }
            try harness.applyMerchant(webhookURL: receiver.url, ratePerSecond: 0.5)
            let runtime = try harness.startedRuntime(harness.makeStage(gate: Self.openGate(maxWait: 0)))
            defer { runtime.stopAndWait() }
            let messages = [try harness.insertPayment(status: .authorized), try harness.insertPayment(status: .authorized)]
            try harness.publish(messages)
            for message in messages { try harness.waitDone(message.paymentId) }
            let errors = try messages.flatMap { try harness.deliveries($0.paymentId).compactMap(\.error) }
            #expect(errors.contains("rate_limited"))
            #expect(receiver.requests.count == 2, "a rate-limited attempt sends nothing")
            #expect(try endpoints(harness).isEmpty, "held back by the worker is not a failure of the endpoint")
        }
    }
}
