import AMQP
import Crypto
import Foundation
import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

extension Integration {
/// Every series prometheus/alerts.yml (and docs/operations.md's alert table) uses moves when its cause happens:
/// each test causes it on the real services and reads the worker's real `/metrics` over HTTP, as Prometheus scrapes
/// it. Series are named as the rules spell them, so a rename that would silence an alert fails here.
/// (`paypipe_payments_failed_total`: DecryptWorkerTests; `paypipe_webhooks_exhausted_total`: NotifyStageTests.)
@Suite struct AlertedMetricsTests {
    /// The reconciler's gauges and the handlers' upkeep refreshed every 200 ms instead of every minute.
    static let reconciling = ["PAYPIPE_RECONCILE_INTERVAL": "200ms"]

    /// The parser reads what the registry renders, escaped label values and histograms included.
    @Test func theScrapeReadsTheRegistrysExposition() throws {
        let registry = MetricsRegistry()
        registry.register("t_gauge", kind: .gauge, help: "g")
        registry.register("t_seconds", kind: .histogram, help: "h", buckets: [0.5])
        let awkward = #"a "quoted" \ back,slash={x}"# + "\nline"
        registry.set("t_gauge", labels: ["stage": "notify", "odd": awkward], to: 1_798_761_600)
        registry.set("t_gauge", to: -2.5)
        registry.observe("t_seconds", labels: ["stage": "submit"], 0.25)
        let scrape = try MetricsScrape(registry.render())
        #expect(scrape.value("t_gauge", ["stage": "notify", "odd": awkward]) == 1_798_761_600)
        #expect(scrape.value("t_gauge") == -2.5)
        #expect(scrape.value("t_gauge", ["stage": "notify"]) == nil, "an exact label set, not a subset")
        #expect(scrape.value("t_seconds_bucket", ["stage": "submit", "le": "+Inf"]) == 1)
        #expect(scrape.value("t_seconds_sum", ["stage": "submit"]) == 0.25)
        #expect(throws: TestFailure.self) { try MetricsScrape(#"t_gauge{stage="x} 1"#) }
    }

    /// PayPipeDependencyDown: `paypipe_database_up` is 0 while PostgreSQL is down and 1 again once it is back, on an
    /// idle worker too (the reconciler's round is its only database operation).
    @Test func databaseUpIsZeroWhilePostgreSQLIsStoppedAndOneAfterIt() throws {
        let harness = try RuntimeHarness(extra: Self.reconciling)
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        let port = try #require(runtime.observabilityPort)
        func up() throws -> Double? { try runtime.scrape().value("paypipe_database_up", ["stage": "authorize"]) }
        try TestServices.eventually("paypipe_database_up 1") { try up() == 1 }
        defer { try? TestServices.services("start", "postgres") }
        try TestServices.services("stop", "postgres")
        try TestServices.eventually("paypipe_database_up 0 while PostgreSQL is stopped") { try up() == 0 }
        let health = try HTTPProbe.get("http://127.0.0.1:\(port)/healthz")
        #expect(health.status == 503 && health.body.contains(#""database":false"#), "\(health.body)")
        try TestServices.services("start", "postgres")
        try TestServices.eventually(timeout: 30, "paypipe_database_up 1 after PostgreSQL started") { try up() == 1 }
        #expect(runtime.health().isHealthy)
    }

    /// PayPipeDependencyDown: `paypipe_broker_up` is 0 while RabbitMQ is down and 1 once the consumer reconnected.
    @Test func brokerUpIsZeroWhileRabbitMQIsStoppedAndOneAfterIt() throws {
        let harness = try RuntimeHarness()
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        func up() throws -> Double? { try runtime.scrape().value("paypipe_broker_up", ["stage": "authorize"]) }
        try TestServices.eventually("paypipe_broker_up 1") { try up() == 1 }
        defer { try? TestServices.services("start", "rabbitmq") }
        try TestServices.services("stop", "rabbitmq")
        try TestServices.eventually(timeout: 30, "paypipe_broker_up 0 while RabbitMQ is stopped") { try up() == 0 }
        try TestServices.services("start", "rabbitmq")
        try TestServices.eventually(timeout: 60, "paypipe_broker_up 1 after RabbitMQ started") { try up() == 1 }
    }

    /// PayPipeCertificateExpiring(Soon): the decrypt worker exports each certificate's notAfter, and a merchant applied
    /// while it runs, with a certificate 10 days from expiry, appears at the next round below the 30-day threshold.
    @Test func certificateNotAfterIsExportedForEveryCertificateOfTheAppliedMerchants() throws {
        let harness = try DecryptHarness()
        let runtime = try harness.startedRuntime(reconcileInterval: "200ms")
        defer { runtime.stopAndWait() }
        let metric = "paypipe_certificate_not_after_seconds"
        var expected: [[String: String]: Double] = [:]
        for merchant in [harness.sandbox.ecMerchant, harness.sandbox.rsaMerchant] {
            let labels = ["merchant": SandboxEnvironment.merchantId, "kind": "payment_processing",
                          "public_key_hash": Data(merchant.identity.publicKeyHash).base64EncodedString()]
            expected[labels] = Double(merchant.identity.certificate.notAfter.secondsSince1970)
        }
        let identityPEM = try String(contentsOfFile: harness.sandbox.merchantIdentityCertificatePath, encoding: .utf8)
        let merchantIdentity = try #require(try Certificate.certificates(pem: identityPEM).first)
        expected[["merchant": SandboxEnvironment.merchantId, "kind": "merchant_identity"]] = Double(merchantIdentity.notAfter.secondsSince1970)
        // The harness's merchant `m1` was inserted without a configuration (as the column's default `{}`): it is
        // skipped and named in the log, and every other merchant's certificates are still watched.
        try TestServices.eventually("the sandbox merchant's certificates on /metrics") { try !runtime.scrape().series(metric).isEmpty }
        #expect(try runtime.scrape().series(metric) == expected)
        #expect(harness.logSink.lines.contains { $0.contains(#""event":"merchant_config_unreadable""#) && $0.contains(#""merchantId":"m1""#) })
        #expect(!harness.logSink.lines.contains { $0.contains(#""event":"upkeep_failed""#) })

        let expiring = try CertificateLifecycleIntegrationTests.identity(expiringInDays: 10)
        let database = try TestServices.database()
        defer { database.close() }
        let applied = try MerchantStore(vault: harness.vault).apply(
            try CertificateLifecycleIntegrationTests.document(expiring, merchantIdentityFile: nil), baseDirectory: nil, deployment: .sandbox, on: database)
        let labels = ["merchant": CertificateLifecycleIntegrationTests.merchantId, "kind": "payment_processing",
                      "public_key_hash": try #require(applied.config.identities.first?.publicKeyHash)]
        try TestServices.eventually("the new merchant's certificate on /metrics") { try runtime.scrape().value(metric, labels) != nil }
        let notAfter = try #require(try runtime.scrape().value(metric, labels))
        #expect(notAfter == Double(expiring.certificate.notAfter.secondsSince1970))
        #expect(notAfter - Date().timeIntervalSince1970 < 30 * 86_400, "what PayPipeCertificateExpiring fires on")
        #expect(try runtime.scrape().series(metric).count == expected.count + 1)
    }

    /// PayPipeDataKeyRotationDue: `paypipe_data_key_seals_total{key_id}` counts the card data sealed by a decrypt.
    @Test func aDecryptMovesDataKeySealsTotal() throws {
        let harness = try DecryptHarness()
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        let labels = ["key_id": harness.vault.keyring.current.id]
        let before = try #require(try runtime.scrape().value("paypipe_data_key_seals_total", labels), "present from start-up")
        try harness.publishJobs([try harness.job("sealed", token: harness.token())])
        try TestServices.eventually("decrypted") { try harness.outcome("sealed")?.status == "decrypted" }
        try TestServices.eventually("the seal counted on /metrics") {
            try runtime.scrape().value("paypipe_data_key_seals_total", labels).map { $0 >= before + 1 } == true
        }
    }

    /// PayPipeQueueAgeHigh, PayPipeReconcilerBacklog and PayPipeNeedsReview: the reconciler's gauges follow a payment
    /// idle in authorize for 10 minutes (re-driven a moment ago, so it stays put) and one in `needs_review`, and fall
    /// back to 0 once the first moves on and the second is closed.
    @Test func theReconcilersGaugesFollowAnIdlePaymentAndOneInNeedsReview() throws {
        let harness = try RuntimeHarness(extra: Self.reconciling.merging(["PAYPIPE_STUCK_AFTER": "5m"]) { $1 })
        let payments = try harness.makePayments(2)
        let (idle, review) = (payments[0], payments[1])
        let database = try TestServices.database()
        defer { database.close() }
        try database.query("UPDATE payments SET updated_at = now() - interval '10 minutes', redriven_at = now() WHERE id = $1", [idle.paymentId])
        try database.query("UPDATE payments SET status = 'needs_review', stage = 'done' WHERE id = $1", [review.paymentId])
        let runtime = try harness.startedRuntime()
        defer { runtime.stopAndWait() }
        let stage = ["stage": "authorize"]
        func gauges() throws -> (age: Double?, backlog: Double?, review: Double?) {
            let scrape = try runtime.scrape()
            return (scrape.value("paypipe_stage_oldest_age_seconds", stage), scrape.value("paypipe_reconciler_backlog", stage),
                    scrape.value("paypipe_payments_needs_review", stage))
        }
        try TestServices.eventually("the gauges show both payments") {
            let now = try gauges()
            return now.age.map { $0 >= 600 } == true && now.backlog == 1 && now.review == 1
        }

        try harness.publish([idle])
        try TestServices.eventually("advanced") { try harness.statuses()["prepared"] == 1 }
        try database.query("UPDATE payments SET status = 'authorized' WHERE id = $1", [review.paymentId])
        try TestServices.eventually("the gauges back at 0") {
            let now = try gauges()
            return now.age == 0 && now.backlog == 0 && now.review == 0
        }
    }

    /// PayPipeCircuitOpen: an endpoint failing twice opens its circuit in notify (`paypipe_circuits_open{stage}` 1);
    /// the half-open probe's success once it answers again closes it (0).
    @Test func aFailingWebhookEndpointOpensItsCircuitOnMetrics() throws {
        let harness = try NotifyHarness(maxRetries: 30, concurrency: 1)
        defer { harness.tearDown() }
        let receiver = try harness.appliedReceiver(answering: 500)
        defer { receiver.stop() }
        let runtime = try harness.startedRuntime(harness.makeStage(gate: EndpointGate(policy: EndpointGatePolicy(failureThreshold: 2, openSeconds: 0.5), stage: .notify)))
        defer { runtime.stopAndWait() }
        func open() throws -> Double? { try runtime.scrape().value("paypipe_circuits_open", ["stage": "notify"]) }
        #expect(try open() == 0)
        let message = try harness.insertPayment(status: .authorized)
        try harness.publish([message])
        try TestServices.eventually("paypipe_circuits_open 1") { try open() == 1 }
        #expect(receiver.requests.count >= 2)
        receiver.script([], then: 204)
        try harness.waitDone(message.paymentId)
        try TestServices.eventually("paypipe_circuits_open 0 after the probe's success") { try open() == 0 }
    }

    /// PayPipeWebhookEndpointDisabled: an endpoint failing longer than the disable period shows in
    /// `paypipe_webhook_endpoints_disabled` at the next upkeep round, and leaves it once re-enabled.
    @Test func aDisabledEndpointShowsOnWebhookEndpointsDisabled() throws {
        let harness = try NotifyHarness(maxRetries: 50, concurrency: 1, extra: Self.reconciling)
        defer { harness.tearDown() }
        let receiver = try harness.appliedReceiver(answering: 503)
        defer { receiver.stop() }
        let runtime = try harness.startedRuntime(harness.makeStage(
            gate: WebhookEndpointHealthTests.openGate(), healthPolicy: EndpointHealthPolicy(disableAfter: 1)))
        defer { runtime.stopAndWait() }
        func disabled() throws -> Double? { try runtime.scrape().value("paypipe_webhook_endpoints_disabled") }
        #expect(try disabled() == 0)
        try harness.publish([try harness.insertPayment(status: .authorized)])
        try TestServices.eventually(timeout: 30, "paypipe_webhook_endpoints_disabled 1") { try disabled() == 1 }

        let database = try harness.database()
        defer { database.close() }
        #expect(try WebhookEndpointStore().enable(merchantId: "m-notify", url: nil, on: database).count == 1)
        try TestServices.eventually("paypipe_webhook_endpoints_disabled 0 once re-enabled") { try disabled() == 0 }
    }

    /// PayPipeRetryTierStalled's premise, on the real broker's per-queue series: a retry tier declared with the runtime's
    /// own arguments (quorum, `x-dead-letter-strategy=at-least-once`) keeps an expired copy it cannot have confirmed by
    /// its stage queue, and RabbitMQ counts it in `rabbitmq_queue_messages` but neither as ready nor as unacknowledged;
    /// a tier whose copies reach their stage holds none. (An unbound stage stands in for the lost dead-letter worker of
    /// RabbitMQ before 3.10.20: both leave the copy dead-lettered and unconfirmed.)
    @Test func aRetryTierShowsExpiredCopiesItHasNotForwardedAsMessagesNeitherReadyNorUnacked() throws {
        let schedule = RetrySchedule(delays: [0.05], maxRetries: 1)
        let (stalled, healthy) = (StageName("alertstalled"), StageName("alerthealthy"))
        let layout = BrokerLayout(stages: [stalled, healthy]).topology(retrySchedule: schedule)
        let connection = try TestServices.amqp()
        defer { connection.close() }
        let names = layout.queues.map(\.name)
        for name in names { _ = try connection.deleteQueue(name) }
        defer { for name in names { _ = try? connection.deleteQueue(name) } }
        // Every queue of both stages, and the healthy stage's binding only: the stalled stage's copies are unroutable.
        try connection.declare(AMQPTopology(exchanges: layout.exchanges, queues: layout.queues,
                                            bindings: layout.bindings.filter { $0.queue == healthy.queueName }))
        let (stalledTier, healthyTier) = (schedule.queueName(for: stalled, tier: 0), schedule.queueName(for: healthy, tier: 0))
        for tier in [stalledTier, healthyTier] {
            for _ in 0..<3 {
                try connection.publish(AMQPOutboundMessage(exchange: "", routingKey: tier, body: Array("{}".utf8),
                                                           properties: AMQPProperties(contentType: "application/json")))
            }
        }
        func series(_ name: String, _ queue: String, in scrape: MetricsScrape) -> Double? {
            scrape.value(name, ["vhost": "/", "queue": queue])
        }
        func unforwarded(_ queue: String, in scrape: MetricsScrape) -> Double? {
            guard let messages = series("rabbitmq_queue_messages", queue, in: scrape),
                  let ready = series("rabbitmq_queue_messages_ready", queue, in: scrape),
                  let unacked = series("rabbitmq_queue_messages_unacked", queue, in: scrape) else { return nil }
            return messages - ready - unacked
        }
        // Queue series are refreshed on the queue's own tick (every few seconds): polled, as Prometheus scrapes.
        var last: MetricsScrape?
        try TestServices.eventually(timeout: 30, "the stalled tier's 3 copies as messages, neither ready nor unacked, and the healthy stage's copies forwarded") {
            let scrape = try MetricsScrape(try HTTPProbe.get(TestServices.brokerMetricsURL + "/metrics/per-object").body)
            last = scrape
            return unforwarded(stalledTier, in: scrape) == 3 && series("rabbitmq_queue_messages", stalledTier, in: scrape) == 3
                && unforwarded(healthyTier, in: scrape) == 0 && series("rabbitmq_queue_messages_ready", healthy.queueName, in: scrape) == 3
        }
        #expect(last.flatMap { series("rabbitmq_queue_messages_ready", stalledTier, in: $0) } == 0)
    }
}
}
