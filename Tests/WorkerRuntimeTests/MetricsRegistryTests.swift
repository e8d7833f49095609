import Testing
@testable import WorkerRuntime

@Suite struct MetricsRegistryTests {
    @Test func rendersPrometheusTextFormat() {
        let registry = MetricsRegistry()
        let metrics = StageMetrics(registry: registry, stage: .decrypt)
        metrics.consumed(3)
        metrics.deadLettered(code: "malformed_json")
        metrics.handled(batch: 2, phases: BatchPhases(handle: 0.003, publish: 0.0008, ack: 0.0002))
        let text = registry.render()
        #expect(text.contains("# TYPE paypipe_messages_consumed_total counter"))
        #expect(text.contains("paypipe_messages_consumed_total{stage=\"decrypt\"} 3"))
        #expect(text.contains("paypipe_messages_dead_lettered_total{code=\"malformed_json\",stage=\"decrypt\"} 1"))
        #expect(text.contains("paypipe_handler_duration_seconds_bucket{le=\"0.0025\",stage=\"decrypt\"} 2"))
        #expect(text.contains("paypipe_handler_duration_seconds_bucket{le=\"+Inf\",stage=\"decrypt\"} 2"))
        #expect(text.contains("paypipe_handler_duration_seconds_count{stage=\"decrypt\"} 2"))
        // One observation per phase and batch, each with its own time.
        #expect(text.contains("paypipe_batch_phase_seconds_bucket{le=\"0.001\",phase=\"publish\",stage=\"decrypt\"} 1"))
        #expect(text.contains("paypipe_batch_phase_seconds_bucket{le=\"0.0025\",phase=\"handle\",stage=\"decrypt\"} 0"))
        #expect(text.contains("paypipe_batch_phase_seconds_bucket{le=\"0.005\",phase=\"handle\",stage=\"decrypt\"} 1"))
        #expect(text.contains("paypipe_batch_phase_seconds_count{phase=\"ack\",stage=\"decrypt\"} 1"))
    }

    /// Prometheus' rate() and increase() count a series' increments from its second sample on: a series that first
    /// appears after a worker's first batch hides that batch, and an idle stage shows as no data. So the stage's
    /// series exist at zero from start-up.
    @Test func aStagesSeriesAreExportedAtZeroBeforeItsFirstBatch() {
        let registry = MetricsRegistry()
        _ = StageMetrics(registry: registry, stage: StageName("operations"))
        let text = registry.render()
        #expect(text.contains("paypipe_messages_consumed_total{stage=\"operations\"} 0\n"))
        #expect(text.contains("paypipe_messages_acked_total{stage=\"operations\"} 0\n"))
        #expect(text.contains("paypipe_in_flight_messages{stage=\"operations\"} 0\n"))
        #expect(text.contains("paypipe_handler_duration_seconds_bucket{le=\"+Inf\",stage=\"operations\"} 0\n"))
        #expect(text.contains("paypipe_handler_duration_seconds_count{stage=\"operations\"} 0\n"))
        #expect(text.contains("paypipe_batch_size_count{stage=\"operations\"} 0\n"))
        for phase in ["handle", "publish", "ack"] {
            #expect(text.contains("paypipe_batch_phase_seconds_count{phase=\"\(phase)\",stage=\"operations\"} 0\n"))
        }
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
