import Crypto
import Foundation
import PaymentStages
import Pipeline
import Testing

/// The notify series as a scrape sees them, without services: registered by `attach(metrics:)` (the launch file), and
/// counted by `committed` from the outcomes a batch committed (it reads nothing else).
@Suite struct NotifyMetricsTests {
    static func stage() throws -> NotifyStage {
        let vault = DataVault(keyring: DataKeyring(current: try DataKey(bytes: SecureRandom.bytes(count: 32)), previous: []))
        return NotifyStage(
            directory: MerchantDirectory(store: MerchantStore(vault: vault), ttl: 0), urlGuard: WebhookURLGuard(allowPrivate: true),
            retrySchedule: .standard)
    }

    /// Every counter is exported at 0 once attached, so an alert on its increase has a series from the start.
    @Test func theSeriesStartAtZero() throws {
        let registry = MetricsRegistry()
        try Self.stage().attach(metrics: registry)
        let scrape = registry.render()
        for series in [
            #"paypipe_webhooks_exhausted_total{stage="notify"} 0"#, #"paypipe_webhook_events_total{type="endpoint.disabled"} 0"#,
            #"paypipe_webhook_events_total{type="webhook.exhausted"} 0"#, "paypipe_webhook_endpoints_disabled 0",
            "paypipe_webhook_health_failures_total 0",
        ] {
            #expect(scrape.contains(series), "\(series) in \(scrape)")
        }
    }

    /// A committed `webhook.exhausted` counts the exhausted delivery and the event; a committed `endpoint.disabled`
    /// the event only; a payment's result, a retry and a failed record count nothing.
    @Test func committedOutcomesCountTheirOperationalEvents() throws {
        let stage = try Self.stage(), registry = MetricsRegistry()
        stage.attach(metrics: registry)
        let result = NotifyEvent(PaymentEventTests.event()).resultMessage
        let at = Date(timeIntervalSince1970: 1_767_225_700)
        let exhausted = OperationalEvent.webhookExhausted(PaymentEventTests.event(), url: "https://m.example/hook", attempts: 9,
                                                          lastError: "http_503", at: at)
        let disabled = OperationalEvent.endpointDisabled(WebhookEndpoint(merchantId: "m1", url: "https://m.example/hook"),
                                                         health: EndpointHealth(failingSince: at, disabledAt: at))
        stage.committed([], [
            .success(.decided(.success(.publish([result, exhausted.message])))),
            .success(.decided(.success(.publish([disabled.message])))),
            .success(.decided(.success(.publish([result])))),
            .success(.decided(.failure(.transient(code: "webhook_failed", reason: "retried")))),
            .failure(.transient(code: "database", reason: "record failed")),
        ])
        #expect(registry.value("paypipe_webhooks_exhausted_total", labels: ["stage": "notify"]) == 1)
        #expect(registry.value("paypipe_webhook_events_total", labels: ["type": "webhook.exhausted"]) == 1)
        #expect(registry.value("paypipe_webhook_events_total", labels: ["type": "endpoint.disabled"]) == 1)
        #expect(registry.value("paypipe_webhook_health_failures_total") == 0)
    }
}
