import AMQP
import Foundation
import HTTP
import JSON
import PaymentStages
import Pipeline
import Testing

extension Integration {
    /// The notify stage end to end: real RabbitMQ (own vhost) and PostgreSQL (own database), a real HTTP receiver that
    /// verifies every signature, the runtime's retry tiers (300 ms) and dead-letter queue.
    @Suite struct NotifyStageTests {
        /// Runs `body` with a harness, a receiver and a started runtime, and tears all of them down.
        func withNotify(maxRetries: Int = 3, concurrency: Int = 2, allowPrivate: Bool = true, webhook: Bool = true,
                        _ body: (NotifyHarness, WebhookTestReceiver) throws -> Void) throws {
            try withNotify(maxRetries: maxRetries, concurrency: concurrency, allowPrivate: allowPrivate, webhook: webhook) { harness, receiver, _ in
                try body(harness, receiver)
            }
        }

        func withNotify(maxRetries: Int = 3, concurrency: Int = 2, allowPrivate: Bool = true, webhook: Bool = true,
                        _ body: (NotifyHarness, WebhookTestReceiver, StageRuntime<NotifyStage>) throws -> Void) throws {
            let harness = try NotifyHarness(maxRetries: maxRetries, concurrency: concurrency)
            defer { harness.tearDown() }
            let receiver = try WebhookTestReceiver(secret: NotifyHarness.secret)
            defer { receiver.stop() }
            try harness.applyMerchant(webhookURL: webhook ? receiver.url : nil)
            let runtime = try harness.startedRuntime(allowPrivate: allowPrivate)
            defer { runtime.stopAndWait() }
            try body(harness, receiver, runtime)
        }

        @Test func deliversOnceSignedAndPublishesOneResultEvent() throws {
            try withNotify { harness, receiver in
                let message = try harness.insertPayment(status: .authorized)
                try harness.publish([message])
                try harness.waitDone(message.paymentId)

                let requests = receiver.requests
                #expect(requests.count == 1)
                let request = try #require(requests.first)
                #expect(request.verified)
                let eventId = PaymentEvent.id(paymentId: message.paymentId, type: .authorized)
                #expect(request.header("webhook-id") == eventId)
                #expect(request.header("content-type") == "application/json")
                let json = try JSONValue.parse(request.body)
                #expect(json["type"]?.stringValue == "payment.authorized")
                #expect(json["data"]?["paymentId"]?.stringValue == message.paymentId.uuidString.lowercased())
                #expect(json["data"]?["amount"]?["value"]?.int64Value == 1050)
                #expect(json["data"]?["gateway"]?["transactionReference"]?.stringValue == "1-2-346")
                #expect(json["data"]?["card"]?["last4"]?.stringValue == "4242")
                #expect(json["data"]?["metadata"]?["cart"]?.stringValue == "c-1")

                let results = try harness.results(count: 1)
                #expect(results.count == 1)
                #expect(results.first?.routingKey == "payment.authorized")
                #expect(results.first?.properties.messageId == eventId)
                #expect(results.first?.body == request.body)
                #expect(try harness.deliveries(message.paymentId).map(\.outcome) == ["delivered"])
                #expect(try harness.deliveries(message.paymentId).first?.statusCode == 204)

                // A duplicate hand-off finds the payment done: no second request; the event again, same message_id.
                try harness.publish([message])
                var again: [AMQPDelivery] = []
                try TestServices.eventually("results event again") {
                    again += try harness.drain(harness.resultsQueue)
                    return !again.isEmpty
                }
                #expect(again.map(\.properties.messageId) == [eventId])
                #expect(receiver.requests.count == 1)
            }
        }

        /// Found by scripts/chaos (PostgreSQL crashed mid-batch): `done` was committed but the commit's answer was lost
        /// with the connection, so the runtime retried the same delivery in place (`redelivered == false`), which found
        /// the payment done and completed it without ever publishing its results event.
        @Test func aDonePaymentWhoseEventWasNeverPublishedGetsItOnTheNextDelivery() throws {
            try withNotify { harness, receiver in
                let message = try harness.insertPayment(status: .declined)
                // The state the lost commit answer leaves behind: done, webhook settled, nothing on paypipe.results.
                _ = try harness.database().query("UPDATE payments SET stage = 'done' WHERE id = $1", [message.paymentId])
                try harness.publish([message])  // a fresh delivery, not marked redelivered
                var results: [AMQPDelivery] = []
                try TestServices.eventually("results event of a done payment") {
                    results += try harness.drain(harness.resultsQueue)
                    return !results.isEmpty
                }
                #expect(results.map(\.routingKey) == ["payment.declined"])
                #expect(results.first?.properties.messageId == PaymentEvent.id(paymentId: message.paymentId, type: .declined))
                #expect(receiver.requests.isEmpty, "the webhook is not sent for a done payment")
            }
        }

        @Test func crashAfterMarkingDoneStillPublishesTheResultEvent() throws {
            let harness = try NotifyHarness(maxRetries: 3, concurrency: 1)
            defer { harness.tearDown() }
            let receiver = try WebhookTestReceiver(secret: NotifyHarness.secret)
            defer { receiver.stop() }
            try harness.applyMerchant(webhookURL: receiver.url)
            let message = try harness.insertPayment(status: .authorized)
            // The first worker delivers and commits `done`, then "crashes" before publishing the results event.
            let crashing = try harness.startedRuntime(hooks: RuntimeHooks(afterCommit: { throw TestFailure("simulated crash") }))
            try harness.publish([message])
            try harness.waitDone(message.paymentId)
            crashing.stopAndWait()
            #expect(try harness.drain(harness.resultsQueue).isEmpty)
            // The broker redelivers (redelivered=true) to a healthy worker: no second webhook, the event is published.
            let healthy = try harness.startedRuntime()
            defer { healthy.stopAndWait() }
            var results: [AMQPDelivery] = []
            try TestServices.eventually("results event after the redelivery") {
                results += try harness.drain(harness.resultsQueue)
                return !results.isEmpty
            }
            #expect(results.count == 1)
            #expect(results.first?.properties.messageId == PaymentEvent.id(paymentId: message.paymentId, type: .authorized))
            #expect(receiver.requests.count == 1, "the webhook itself is not sent again")
        }

        @Test func retriesWithTheSameWebhookIdUntilTheReceiverRecovers() throws {
            try withNotify(maxRetries: 5) { harness, receiver in
                receiver.script([503, 502, 429])
                let message = try harness.insertPayment(status: .declined)
                try harness.publish([message])
                try harness.waitDone(message.paymentId)

                let requests = receiver.requests
                #expect(requests.count == 4)
                #expect(requests.allSatisfy { $0.verified })
                #expect(Set(requests.compactMap { $0.header("webhook-id") }) == [PaymentEvent.id(paymentId: message.paymentId, type: .declined)])
                let deliveries = try harness.deliveries(message.paymentId)
                #expect(deliveries.map(\.outcome) == ["retrying", "retrying", "retrying", "delivered"])
                #expect(deliveries.map(\.attempt) == [1, 2, 3, 4])
                #expect(deliveries.map(\.statusCode) == [503, 502, 429, 204])
                #expect(try harness.results(count: 1).map(\.routingKey) == ["payment.declined"])
                #expect(try harness.drain(Stage.notify.deadLetterQueueName).isEmpty)
            }
        }

        /// A hostile endpoint answering `Retry-After: 9223372036854775807` trapped `Int(seconds)` (the delay did not
        /// fit an Int once made a Double), crash-looping notify for every merchant. The delay is clamped instead.
        @Test func aHugeRetryAfterIsClampedAndTheWorkerKeepsDelivering() throws {
            try withNotify(maxRetries: 5) { harness, receiver in
                receiver.script([503])
                receiver.respond(with: [HTTPHeader("Retry-After", "9223372036854775807")])
                let message = try harness.insertPayment(status: .declined)
                try harness.publish([message])
                try TestServices.eventually("the first attempt recorded") { try !harness.deliveries(message.paymentId).isEmpty }
                let first = try #require(try harness.deliveries(message.paymentId).first)
                #expect(first.outcome == "retrying")
                #expect(first.error == "http_503 retry-after=86400s")
                // The worker is alive: another merchant's endpoint still gets its delivery.
                let other = try WebhookTestReceiver(secret: NotifyHarness.secret)
                defer { other.stop() }
                let next = try harness.insertPayment(status: .authorized, notifyURL: other.url)
                try harness.publish([next])
                try harness.waitDone(next.paymentId)
                #expect(other.requests.count == 1)
            }
        }

        @Test func exhaustedRetriesDeadLetterAndRecordFailure() throws {
            try withNotify(maxRetries: 2) { harness, receiver, runtime in
                receiver.script([], then: 500)
                let message = try harness.insertPayment(status: .failed)
                try harness.publish([message])
                try harness.waitDone(message.paymentId)

                #expect(receiver.requests.count == 3)
                let deliveries = try harness.deliveries(message.paymentId)
                #expect(deliveries.map(\.outcome) == ["retrying", "retrying", "failed"])
                #expect(deliveries.last?.error == "http_500")
                var dead: [AMQPDelivery] = []
                try TestServices.eventually("dead letter") {
                    dead += try harness.drain(Stage.notify.deadLetterQueueName)
                    return !dead.isEmpty
                }
                #expect(dead.count == 1)
                #expect(dead.first?.properties.headers[DeliveryRouter.Header.errorCode] == .string("retries_exhausted"))
                #expect((try? StageMessage.decode(dead.first?.body ?? [])) == message)
                #expect(try harness.results(count: 2).map(\.routingKey) == ["payment.failed", "webhook.exhausted"])
                // The series the WebhooksExhausted alert uses moved, as Prometheus scrapes it.
                let scrape = try runtime.scrape()
                #expect(scrape.value("paypipe_webhooks_exhausted_total", ["stage": "notify"]) == 1, "\(scrape.text)")
            }
        }

        @Test func goneDisablesTheEndpoint() throws {
            try withNotify { harness, receiver in
                receiver.script([410])
                let first = try harness.insertPayment(status: .authorized)
                try harness.publish([first])
                try harness.waitDone(first.paymentId)
                #expect(try harness.deliveries(first.paymentId).map(\.outcome) == ["disabled"])
                #expect(try harness.merchant()?.config.webhook?.enabled == false)

                // Disabled: the next payment is not POSTed, yet still gets its results event.
                let second = try harness.insertPayment(status: .needsReview)
                try harness.publish([second])
                try harness.waitDone(second.paymentId)
                #expect(receiver.requests.count == 1)
                #expect(try harness.deliveries(second.paymentId).isEmpty)
                #expect(try harness.results(count: 2).map(\.routingKey).sorted() == ["payment.authorized", "payment.needs_review"])
            }
        }

        /// `paypipe merchant apply` accepts only `whsec_` + base64 of 24-64 bytes, current and previous secrets alike;
        /// the error names the field, never the secret.
        @Test func applyRefusesAWebhookSecretOutsideTheRules() throws {
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            func secret(_ count: Int) -> String { "whsec_" + Data((0..<count).map { UInt8($0) }).base64EncodedString() }
            for bad in [secret(16), secret(23), secret(65), Data((0..<32).map { UInt8($0) }).base64EncodedString(), "whsec_not base64!", "whsec_"] {
                #expect(throws: MerchantStore.MerchantError.self, "\(bad)") { try harness.applyMerchant(webhookURL: "https://shop.example/hook", secret: bad) }
                #expect(throws: MerchantStore.MerchantError.self, "\(bad)") {
                    try harness.applyMerchant(webhookURL: "https://shop.example/hook", secret: secret(32), previousSecrets: [bad])
                }
                do {
                    try harness.applyMerchant(webhookURL: "https://shop.example/hook", secret: bad)
                } catch {
                    #expect(!"\(error)".contains(bad.dropFirst(6).prefix(8)) || bad.count <= 8, "the error does not echo the secret")
                }
            }
            for good in [secret(24), secret(32), secret(64)] {
                try harness.applyMerchant(webhookURL: "https://shop.example/hook", secret: good)
            }
        }

        /// A secret stored before the rule (or written around `merchant apply`) is never used to sign: the attempt is
        /// recorded failed `invalid_webhook_secret`, nothing is sent, and `webhook_secret_invalid` names the merchant only.
        @Test func notifyRefusesToSignWithAStoredSecretOutsideTheRules() throws {
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            let short = "whsec_" + Data((1...16).map { UInt8($0) }).base64EncodedString()
            let receiver = try WebhookTestReceiver(secret: short)
            defer { receiver.stop() }
            try harness.applyMerchant(webhookURL: receiver.url)
            let database = try harness.database()
            defer { database.close() }
            let sealed = try harness.vault.seal(Array(try JSONEncoder().encode(MerchantSecrets(privateKeys: [], jwtSecret: nil, webhookSecrets: [short]))),
                                                aad: Array("m-notify".utf8))
            try database.query("UPDATE merchants SET secrets_ciphertext = $1, secrets_nonce = $2, secrets_key_id = $3 WHERE id = 'm-notify'",
                               [sealed.ciphertext, sealed.nonce, sealed.keyId])
            let runtime = try harness.startedRuntime()
            defer { runtime.stopAndWait() }
            let message = try harness.insertPayment(status: .authorized)
            try harness.publish([message])
            try harness.waitDone(message.paymentId)
            #expect(receiver.requests.isEmpty)
            #expect(try harness.deliveries(message.paymentId).map(\.error) == ["invalid_webhook_secret"])
            let logged = harness.logSink.lines.filter { $0.contains("webhook_secret_invalid") }
            #expect(logged.count == 1, "\(harness.logSink.lines)")
            #expect(logged.first?.contains("m-notify") == true)
            #expect(!harness.logSink.lines.joined().contains(String(short.dropFirst(6))), "the secret is never logged")
        }

        @Test func ssrfGuardRefusesPrivateTargetsInProduction() throws {
            try withNotify(allowPrivate: false) { harness, receiver in
                let message = try harness.insertPayment(status: .authorized)
                try harness.publish([message])
                try harness.waitDone(message.paymentId)
                #expect(receiver.requests.isEmpty)
                let deliveries = try harness.deliveries(message.paymentId)
                #expect(deliveries.map(\.outcome) == ["failed"])
                #expect(deliveries.first?.error?.hasPrefix("ssrf_refused") == true)
                #expect(try harness.results(count: 1).count == 1)
            }
        }

        /// DNS rebinding: the guard's lookup says "public", libcurl's own lookup of the same name gives loopback. With
        /// PAYPIPE_WEBHOOK_ALLOW_PRIVATE=0 the name check alone would let the POST reach the internal address; the
        /// connected-address check refuses it before any byte is sent, and the delivery is recorded as refused. Only loopback is contacted.
        @Test func aRebindingHostIsRefusedAtTheConnectedAddress() throws {
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            let receiver = try WebhookTestReceiver(secret: NotifyHarness.secret)
            defer { receiver.stop() }
            #expect(try !NotifyStage.allowsPrivateTargets(.production, environment: EnvironmentReader(["PAYPIPE_WEBHOOK_ALLOW_PRIVATE": "0"])))
            let rebinding = WebhookURLGuard(allowPrivate: false, resolve: { host in
                host == "localhost" ? [IPAddress("93.184.216.34")!] : []
            })
            #expect(rebinding.check(receiver.url(host: "localhost")) == .allowed, "the guard's lookup is fooled")
            try harness.applyMerchant(webhookURL: receiver.url(host: "localhost"))
            let runtime = try harness.startedRuntime(urlGuard: rebinding)
            defer { runtime.stopAndWait() }
            let message = try harness.insertPayment(status: .authorized)
            try harness.publish([message])
            try harness.waitDone(message.paymentId)
            #expect(receiver.requests.isEmpty, "the receiver never saw the POST")
            let deliveries = try harness.deliveries(message.paymentId)
            #expect(deliveries.map(\.outcome) == ["failed"])
            #expect(deliveries.first?.error?.hasPrefix("ssrf_refused: connected to internal address") == true, "\(deliveries)")
            #expect(try harness.results(count: 1).map(\.routingKey) == ["payment.authorized"])
        }

        @Test func jobNotifyURLOverridesTheMerchantWebhook() throws {
            let other = try WebhookTestReceiver(secret: NotifyHarness.secret)
            defer { other.stop() }
            try withNotify { harness, receiver in
                let message = try harness.insertPayment(status: .authorized, notifyURL: other.url)
                try harness.publish([message])
                try harness.waitDone(message.paymentId)
                #expect(receiver.requests.isEmpty)
                #expect(other.requests.count == 1)
                #expect(other.requests.first?.verified == true)
            }
        }

        /// A slow endpoint does not hold up others: the requests of a batch run concurrently (not capped at the core
        /// count). Four endpoints each hold their request until all four are in flight at once; a sender that
        /// serialised them would see each released only after the probe's limit, with never more than one in flight.
        /// (The batch's acks and results events still wait for its slowest request: the runtime settles batches whole.)
        @Test func slowEndpointsAreCalledConcurrently() throws {
            let slow = try (0..<4).map { _ in try WebhookTestReceiver(secret: NotifyHarness.secret) }
            defer { slow.forEach { $0.stop() } }
            // A loaded machine may start the four calls seconds apart: each is held up to 10 s for the others, and the
            // calls time out only after 15 s, so a request the sender gave up on is never counted as in flight.
            let probe = InFlightProbe(parties: slow.count, limit: 10)
            slow.forEach { $0.hold(with: probe) }
            let harness = try NotifyHarness(concurrency: 1)
            defer { harness.tearDown() }
            try harness.applyMerchant(webhookURL: slow[0].url)  // the secret; each job's notify_url picks its endpoint
            let messages = try slow.map { try harness.insertPayment(status: .authorized, notifyURL: $0.url) }
            // Queued before the runtime starts, so one lane usually takes all four in one batch.
            try harness.publish(messages)
            let runtime = try harness.startedRuntime(harness.makeStage(totalTimeout: 15))
            defer { runtime.stopAndWait() }
            try TestServices.eventually(timeout: 60, "all four requests") { slow.allSatisfy { $0.requests.count == 1 } }
            // The lane may take the four in two batches (its batch is what has arrived when it starts), so the proof of
            // concurrency is that calls overlap at all: a sender that serialises them never has two in flight.
            #expect(probe.peak > 1, "requests in flight together: \(probe.peak) of \(slow.count)")
            for message in messages { try harness.waitDone(message.paymentId) }
        }

        @Test func replayResendsWithTheSameWebhookId() throws {
            try withNotify { harness, receiver in
                let message = try harness.insertPayment(status: .authorized)
                try harness.publish([message])
                try harness.waitDone(message.paymentId)
                let database = try harness.database()
                defer { database.close() }
                let replayed = try WebhookReplay().reset(.payment(message.paymentId), on: database)
                #expect(replayed == [message])
                try harness.publish(replayed)
                try TestServices.eventually("second delivery") { receiver.requests.count == 2 }
                try harness.waitDone(message.paymentId)
                let ids = receiver.requests.map { $0.header("webhook-id") }
                #expect(ids[0] == ids[1])
                #expect(receiver.requests.allSatisfy { $0.verified })
                #expect(try harness.deliveries(message.paymentId).map(\.outcome) == ["delivered", "delivered"])
            }
        }

        @Test func replaySinceSelectsPaymentsWithFailedDeliveries() throws {
            try withNotify(maxRetries: 0) { harness, receiver in
                receiver.script([], then: 500)
                let failing = try harness.insertPayment(status: .authorized)
                try harness.publish([failing])
                try harness.waitDone(failing.paymentId)
                #expect(try harness.deliveries(failing.paymentId).map(\.outcome) == ["failed"])
                receiver.script([], then: 204)
                let fine = try harness.insertPayment(status: .declined)
                try harness.publish([fine])
                try harness.waitDone(fine.paymentId)

                let database = try harness.database()
                defer { database.close() }
                #expect(try WebhookReplay().reset(.failedSince(Date().addingTimeInterval(60)), on: database).isEmpty)
                let replayed = try WebhookReplay().reset(.failedSince(Date().addingTimeInterval(-60)), on: database)
                #expect(replayed == [failing])
                try harness.publish(replayed)
                try harness.waitDone(failing.paymentId)
                #expect(try harness.deliveries(failing.paymentId).map(\.outcome) == ["failed", "delivered"])
                #expect(try harness.deliveries(fine.paymentId).map(\.outcome) == ["delivered"])
            }
        }

        /// During a secret rotation each request carries one signature per secret, so a receiver still on the old
        /// secret verifies, and so does one already on the new secret.
        @Test func rotationSignsWithEverySecret() throws {
            let newSecret = "whsec_" + Data((1...32).map { UInt8(64 + $0) }).base64EncodedString()
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            let onOld = try WebhookTestReceiver(secret: NotifyHarness.secret)
            defer { onOld.stop() }
            let onNew = try WebhookTestReceiver(secret: newSecret)
            defer { onNew.stop() }
            try harness.applyMerchant(webhookURL: onOld.url, secret: newSecret, previousSecrets: [NotifyHarness.secret])
            let runtime = try harness.startedRuntime()
            defer { runtime.stopAndWait() }
            let first = try harness.insertPayment(status: .authorized)
            let second = try harness.insertPayment(status: .declined, notifyURL: onNew.url)
            try harness.publish([first, second])
            try harness.waitDone(first.paymentId)
            try harness.waitDone(second.paymentId)
            for request in onOld.requests + onNew.requests {
                #expect(request.verified)
                #expect(request.header("webhook-signature")?.split(separator: " ").count == 2)
            }
            #expect(onOld.requests.count == 1 && onNew.requests.count == 1)
        }

        @Test func noWebhookConfiguredStillPublishesTheResult() throws {
            try withNotify(webhook: false) { harness, receiver in
                let message = try harness.insertPayment(status: .declined)
                try harness.publish([message])
                try harness.waitDone(message.paymentId)
                #expect(try harness.deliveries(message.paymentId).isEmpty)
                #expect(try harness.results(count: 1).map(\.routingKey) == ["payment.declined"])
            }
        }

        /// The `standardwebhooks` PyPI reference verifier accepts PayPipe's requests. `scripts/bootstrap` installs
        /// it; without it this test fails rather than silently passing.
        @Test func referenceVerifierAcceptsOurSignatures() throws {
            try #require(try ChildProcess.run("/usr/bin/env", ["python3", "-c", "import standardwebhooks"]) == 0,
                         "python3 cannot import standardwebhooks: run scripts/bootstrap (pip install standardwebhooks)")
            try withNotify { harness, receiver in
                let message = try harness.insertPayment(status: .authorized)
                try harness.publish([message])
                try harness.waitDone(message.paymentId)
                let request = try #require(receiver.requests.first)
                let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                    .deletingLastPathComponent().appendingPathComponent("scripts/verify-webhooks.py").path
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: directory) }
                func capture(_ name: String, body: [UInt8]) throws -> String {
                    let headers = ["webhook-id", "webhook-timestamp", "webhook-signature"].reduce(into: [String: String]()) {
                        $0[$1] = request.header($1)
                    }
                    let json: [String: Any] = ["secret": NotifyHarness.secret, "headers": headers, "body_base64": Data(body).base64EncodedString()]
                    let path = directory.appendingPathComponent(name).path
                    try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: path))
                    return path
                }
                #expect(try ChildProcess.run("/usr/bin/env", ["python3", script, try capture("good.json", body: request.body)]) == 0)
                // With jsonschema available, the body also matches docs/schemas/event.schema.json.
                if (try? ChildProcess.run("/usr/bin/env", ["python3", "-c", "import jsonschema"])) == 0 {
                    let schema = URL(fileURLWithPath: script).deletingLastPathComponent().deletingLastPathComponent()
                        .appendingPathComponent("docs/schemas/event.schema.json").path
                    #expect(try ChildProcess.run("/usr/bin/env", ["python3", script, "--schema", schema, try capture("schema.json", body: request.body)]) == 0)
                }
                #expect(try ChildProcess.run("/usr/bin/env", ["python3", script, try capture("tampered.json", body: request.body + [0x20])]) == 1)
            }
        }
    }
}
