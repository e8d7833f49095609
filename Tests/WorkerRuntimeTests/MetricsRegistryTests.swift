import Testing
@testable import WorkerRuntime

@Suite struct MetricsRegistryTests {
    @Test func rendersPrometheusTextFormat() {
        let registry = MetricsRegistry()
        let metrics = StageMetrics(registry: registry, stage: .decrypt)
        metrics.consumed(3)
        metrics.deadLettered(code: "malformed_json")
        metrics.handled(batch: 2, seconds: 0.004)
        let text = registry.render()
        #expect(text.contains("# TYPE paypipe_messages_consumed_total counter"))
        #expect(text.contains("paypipe_messages_consumed_total{stage=\"decrypt\"} 3"))
        #expect(text.contains("paypipe_messages_dead_lettered_total{code=\"malformed_json\",stage=\"decrypt\"} 1"))
        #expect(text.contains("paypipe_handler_duration_seconds_bucket{le=\"0.0025\",stage=\"decrypt\"} 2"))
        #expect(text.contains("paypipe_handler_duration_seconds_bucket{le=\"+Inf\",stage=\"decrypt\"} 2"))
        #expect(text.contains("paypipe_handler_duration_seconds_count{stage=\"decrypt\"} 2"))
    }

    @Test func escapesLabelValues() {
        #expect(MetricsRegistry.labelText(["reason": "a\"b\\c\nd"]) == "{reason=\"a\\\"b\\\\c\\nd\"}")
    }

    @Test func gaugesGoUpAndDown() {
        let registry = MetricsRegistry()
        let metrics = StageMetrics(registry: registry, stage: .notify)
        metrics.inFlight(5)
        metrics.inFlight(-2)
        #expect(registry.value(StageMetrics.Name.inFlight, labels: ["stage": "notify"]) == 3)
    }

    @Test func healthReportJSON() {
        let report = HealthReport(checks: ["database": true, "broker": false])
        #expect(!report.isHealthy)
        #expect(report.json == "{\"status\":\"unavailable\",\"checks\":{\"broker\":false,\"database\":true}}")
    }
}
