import AMQP
import Foundation
import Pipeline
import Postgres
import Testing

/// The worker runtime against the real RabbitMQ and PostgreSQL. Serialized: some tests restart the services.
extension Integration {
@Suite struct StageRuntimeTests {
    @Test func confirmedRoundTripAdvancesAndHandsOff() throws {
        let harness = try RuntimeHarness()
        let payments = try harness.makePayments(100)
        let runtime = try harness.makeRuntime()
        try runtime.start()
        try harness.publish(payments)
        try TestServices.eventually("100 payments prepared") { try harness.statuses()["prepared"] == 100 }
        try TestServices.eventually("100 hand-offs to submit") { try harness.depth("paypipe.submit") == 100 }
        runtime.requestStop()
        #expect(runtime.waitUntilStopped())
        let handOffs = try harness.drain("paypipe.submit").map { try StageMessage.decode($0.body) }
        #expect(Set(handOffs.map(\.paymentId)) == Set(payments.map(\.paymentId)))
        #expect(try harness.depth("paypipe.authorize") == 0)
        #expect(try harness.advanceEvents() == 100)
        #expect(runtime.metrics.registry.value(StageMetrics.Name.acked, labels: ["stage": "authorize"]) == 100)
        // Every acked batch's time split into its phases: each phase observed once per batch, and together they are the
        // batch's time (paypipe_handler_duration_seconds, which spreads it over the batch's messages).
        let scrape = try MetricsScrape(runtime.metrics.registry.render())
        let batches = try #require(scrape.value("paypipe_batch_size_count", ["stage": "authorize"]))
        var phases = 0.0
        for phase in ["handle", "publish", "ack"] {
            #expect(scrape.value("paypipe_batch_phase_seconds_count", ["stage": "authorize", "phase": phase]) == batches)
            let seconds = try #require(scrape.value("paypipe_batch_phase_seconds_sum", ["stage": "authorize", "phase": phase]))
            #expect(seconds > 0, "\(phase)")
            phases += seconds
        }
        let handler = try #require(scrape.value("paypipe_handler_duration_seconds_sum", ["stage": "authorize"]))
        #expect(abs(phases - handler) < 1e-9 * max(1, handler), "phases \(phases) s, handler \(handler) s")
    }

    @Test func transientFailureRetriesAfterTheTierDelay() throws {
        let harness = try RuntimeHarness()
        let payment = try harness.makePayments(1)[0]
        harness.stage.controls.withLock { $0.transientFailures[payment.paymentId] = 1 }
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        let published = Date()
        try harness.publish([payment])
        try TestServices.eventually("payment prepared after one retry") { try harness.statuses()["prepared"] == 1 }
        let elapsed = Date().timeIntervalSince(published)
        #expect(elapsed >= 0.24, "the retry waited for the 300 ms tier less at most 20 % jitter (took \(elapsed)s)")
        #expect(harness.stage.controls.withLock { $0.handled } == 2)
        #expect(try harness.advanceEvents() == 1)
        #expect(runtime.metrics.registry.value(StageMetrics.Name.retried, labels: ["stage": "authorize", "code": "test_transient"]) == 1)
    }

    @Test func exhaustedRetriesAreDeadLetteredWithTheirReason() throws {
        let harness = try RuntimeHarness()
        let payment = try harness.makePayments(1)[0]
        harness.stage.controls.withLock { $0.transientFailures[payment.paymentId] = 100 }
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publish([payment])
        try TestServices.eventually("dead letter") { try harness.depth("paypipe.authorize.dlq") == 1 }
        let dead = try harness.drain("paypipe.authorize.dlq")[0]
        #expect(dead.properties.headers[DeliveryRouter.Header.errorCode] == .string("retries_exhausted"))
        #expect(harness.stage.controls.withLock { $0.handled } == 3, "first attempt + 2 retries")
        #expect(try harness.statuses()["decrypted"] == 1, "the payment itself is untouched")
    }

    /// A publisher's `x-delivery-count: 25` dead-lettered a first delivery as a crash loop, its `x-paypipe-retries: 2`
    /// used up the retries before the first attempt, and `x-paypipe-retries: -1` trapped the worker (`delays[-1]`).
    @Test func publisherHeadersDoNotSteerTheRuntime() throws {
        let harness = try RuntimeHarness()
        let payments = try harness.makePayments(2)
        harness.stage.controls.withLock { controls in
            for payment in payments { controls.transientFailures[payment.paymentId] = 1 }
        }
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publish([payments[0].encoded()], exchange: "", routingKey: "paypipe.authorize",
                            headers: [DeliveryRouter.Header.retries: .int(2), "x-delivery-count": .int(25)])
        try harness.publish([payments[1].encoded()], exchange: "", routingKey: "paypipe.authorize",
                            headers: [DeliveryRouter.Header.retries: .int(-1)])
        try TestServices.eventually("both payments prepared after one retry each") { try harness.statuses()["prepared"] == 2 }
        #expect(harness.stage.controls.withLock { $0.handled } == 4)
        #expect(try harness.depth("paypipe.authorize.dlq") == 0)
    }

    /// A hand-off whose queue was deleted under a running worker came back unroutable on every attempt: the
    /// publisher declares the topology only when it connects, so the runtime retried the same publish forever.
    @Test func anUnroutableHandOffRedeclaresTheTopologyOnce() throws {
        let harness = try RuntimeHarness()
        let payment = try harness.makePayments(1)[0]
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try TestServices.eventually("the worker connected") { runtime.health().isHealthy }
        // The publisher connects (and declares) on its first publish; make sure that happened before the deletion.
        try harness.publish([payment])
        try TestServices.eventually("first hand-off") { try harness.depth("paypipe.submit") == 1 }
        _ = try harness.drain("paypipe.submit")
        let admin = try TestServices.amqp()
        _ = try admin.deleteQueue("paypipe.submit")
        admin.close()
        let second = try harness.makePayments(1)[0]
        try harness.publish([second], declaring: false)
        try TestServices.eventually("the hand-off routed after re-declaring") { try harness.depth("paypipe.submit") == 1 }
        #expect(try harness.drain("paypipe.submit").map { try StageMessage.decode($0.body) } == [second])
        #expect(try harness.depth("paypipe.authorize.dlq") == 0)
    }

    /// What still has no route after re-declaring is dead-lettered `unroutable` (with where it was going), and the
    /// delivery acked: it never loops.
    @Test func aMessageWithNoRouteAfterRedeclaringIsDeadLetteredUnroutable() throws {
        let harness = try RuntimeHarness()
        let payments = try harness.makePayments(2)
        harness.stage.controls.withLock { $0.unroutable = true }
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publish(payments)
        try TestServices.eventually("dead letters") { try harness.depth("paypipe.authorize.dlq") == 2 }
        let dead = try harness.drain("paypipe.authorize.dlq")
        #expect(dead.allSatisfy { $0.properties.headers[DeliveryRouter.Header.errorCode] == .string("unroutable") })
        #expect(dead.allSatisfy { $0.properties.headers[DeliveryRouter.Header.originalExchange] == .string(PipelineTopology.stagesExchange) })
        #expect(dead.allSatisfy { $0.properties.headers[DeliveryRouter.Header.originalRoutingKey] == .string("nowhere") })
        #expect(Set(try dead.map { try StageMessage.decode($0.body).paymentId }) == Set(payments.map(\.paymentId)))
        try TestServices.eventually("deliveries acked") { try harness.depth("paypipe.authorize") == 0 }
        #expect(runtime.metrics.registry.value(StageMetrics.Name.deadLettered, labels: ["stage": "authorize", "code": "unroutable"]) == 2)
    }

    @Test func duplicateMessageHasNoSecondEffect() throws {
        let harness = try RuntimeHarness()
        let payment = try harness.makePayments(1)[0]
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publish([payment, payment])
        try TestServices.eventually("both deliveries handled") { try harness.depth("paypipe.submit") == 2 }
        #expect(try harness.advanceEvents() == 1)
        #expect(try harness.statuses() == ["prepared": 1])
    }

    @Test func crashBetweenCommitAndHandOffStillReachesTheNextStage() throws {
        let harness = try RuntimeHarness()
        let payments = try harness.makePayments(5)
        // First runtime: commits, then "crashes" before publishing or acking.
        let crashing = try harness.makeRuntime(hooks: RuntimeHooks(afterCommit: { throw TestFailure("simulated crash") }))
        try crashing.start()
        try harness.publish(payments)
        try TestServices.eventually("committed") { try harness.statuses()["prepared"] == 5 }
        #expect(try harness.depth("paypipe.submit") == 0, "nothing was handed off yet")
        crashing.requestStop()
        crashing.waitUntilStopped()
        // The unacked deliveries return to the queue; a healthy worker finds the payments advanced and re-publishes.
        let healthy = try harness.startedRuntime()
        defer { healthy.stopAndWait() }
        try TestServices.eventually("hand-offs published on redelivery") { try harness.depth("paypipe.submit") == 5 }
        #expect(try harness.advanceEvents() == 5, "no second effect")
    }

    @Test func unparsableMessageIsDeadLetteredAndTheNextOneProcessed() throws {
        let harness = try RuntimeHarness()
        let payment = try harness.makePayments(1)[0]
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publish([Array("{not json".utf8), payment.encoded()])
        try TestServices.eventually("valid message processed") { try harness.statuses()["prepared"] == 1 }
        try TestServices.eventually("dead letter") { try harness.depth("paypipe.authorize.dlq") == 1 }
        let dead = try harness.drain("paypipe.authorize.dlq")[0]
        #expect(dead.body == Array("{not json".utf8))
        #expect(dead.properties.headers[DeliveryRouter.Header.errorCode] == .string("malformed_message"))
        #expect(dead.properties.headers[DeliveryRouter.Header.stage] == .string("authorize"))
        #expect(harness.logSink.lines.contains { $0.contains("\"event\":\"dead_lettered\"") && $0.contains("malformed_message") })
    }

    @Test func oversizedMessageIsDeadLetteredUnread() throws {
        let harness = try RuntimeHarness(extra: ["PAYPIPE_MAX_MESSAGE_BYTES": "1024"])
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publish([Array(repeating: UInt8(ascii: "x"), count: 4096)])
        try TestServices.eventually("dead letter") { try harness.depth("paypipe.authorize.dlq") == 1 }
        #expect(try harness.drain("paypipe.authorize.dlq")[0].properties.headers[DeliveryRouter.Header.errorCode] == .string("message_too_large"))
    }

    @Test func sigtermDrainsInFlightWork() throws {
        let harness = try RuntimeHarness()
        let payments = try harness.makePayments(10)
        harness.stage.controls.withLock { $0.delay = 0.2 }
        let runtime = try harness.makeRuntime()
        try runtime.start()
        try harness.publish(payments)
        try TestServices.eventually("work in flight") { harness.stage.controls.withLock { $0.handled } > 0 }
        runtime.requestStop()
        #expect(runtime.waitUntilStopped(), "drained within the shutdown timeout")
        // Everything that was delivered before the stop was finished and acked; nothing was lost.
        let prepared = try harness.statuses()["prepared"] ?? 0
        let waiting = try harness.depth("paypipe.authorize")
        #expect(prepared + waiting == 10)
        #expect(try harness.depth("paypipe.submit") == prepared)
        #expect(prepared > 0)
    }

    @Test func healthAndMetricsAreServed() throws {
        let harness = try RuntimeHarness()
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        let port = try #require(runtime.observabilityPort)
        try TestServices.eventually("healthy") { runtime.health().isHealthy }
        let health = try HTTPProbe.get("http://127.0.0.1:\(port)/healthz")
        #expect(health.status == 200)
        #expect(health.body.contains("\"database\":true"))
        let metrics = try HTTPProbe.get("http://127.0.0.1:\(port)/metrics")
        #expect(metrics.body.contains("# TYPE paypipe_messages_consumed_total counter"))
    }

    @Test func survivesBrokerRestartWithoutLosingMessages() throws {
        let harness = try RuntimeHarness()
        let payments = try harness.makePayments(60)
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publish(Array(payments.prefix(30)))
        try TestServices.services("restart", "rabbitmq")
        try harness.publish(Array(payments.suffix(30)))
        try TestServices.eventually(timeout: 60, "all 60 prepared after the broker restart") { try harness.statuses()["prepared"] == 60 }
        try TestServices.eventually(timeout: 30, "every hand-off published") { try harness.depth("paypipe.submit") >= 60 }
        // Redelivery after the restart may hand a payment off twice (at-least-once); none is missing.
        let handedOff = Set(try harness.drain("paypipe.submit").map { try StageMessage.decode($0.body).paymentId })
        #expect(handedOff == Set(payments.map(\.paymentId)))
        #expect(try harness.advanceEvents() == 60)
        #expect(try harness.depth("paypipe.authorize.dlq") == 0)
    }

    /// Also through the cluster forms of both URLs (a dead node and host listed first, `target_session_attrs`): the
    /// same hold-and-retry carries the worker across the outage, and every reconnect walks the lists again.
    @Test(arguments: [false, true])
    func survivesDatabaseRestartWithoutLosingMessages(clusterURLs: Bool) throws {
        let harness = try RuntimeHarness(extra: clusterURLs ? [
            "PAYPIPE_DATABASE_URL": TestServices.databaseURL.replacingOccurrences(of: "@", with: "@127.0.0.1:1,")
                + (TestServices.databaseURL.contains("?") ? "&" : "?") + "target_session_attrs=read-write",
            "PAYPIPE_AMQP_URL": TestServices.amqpURL.replacingOccurrences(
                of: #"@[^/]+/"#, with: "@127.0.0.1:1/", options: .regularExpression) + "," + TestServices.amqpURL,
        ] : [:])
        if clusterURLs {
            #expect(try PostgresConfiguration(url: harness.configuration.databaseURL).endpoints.count == 2)
            #expect(try AMQPConfiguration(url: harness.configuration.amqpURL).nodes.count == 2)
        }
        let payments = try harness.makePayments(60)
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        try harness.publish(Array(payments.prefix(30)))
        try TestServices.eventually("first half prepared") { try harness.statuses()["prepared"] == 30 }
        try TestServices.services("stop", "postgres")
        try harness.publish(Array(payments.suffix(30)))
        Thread.sleep(forTimeInterval: 1)
        #expect(!runtime.health().isHealthy || harness.stage.controls.withLock { $0.handled } == 30)
        try TestServices.services("start", "postgres")
        try TestServices.eventually(timeout: 60, "all 60 prepared after the database restart") { try harness.statuses()["prepared"] == 60 }
        try TestServices.eventually("all hand-offs published") { try harness.depth("paypipe.submit") == 60 }
        #expect(try harness.advanceEvents() == 60)
        #expect(try harness.depth("paypipe.authorize.dlq") == 0)
    }
}
}
