import Pipeline

/// `paypipe_circuits_open{stage}`: how many endpoints' circuits a worker holds not closed (open, or half-open and
/// waiting for a success) — the gateway breaker in submit, the webhook gate in notify. 0 from the start.
enum CircuitMetrics {
    static let open = "paypipe_circuits_open"

    static func attach(_ metrics: AttachedMetrics, to registry: MetricsRegistry, stage: Stage) {
        metrics.attach(registry) { registry in
            registry.register(open, kind: .gauge, help: "Endpoints whose circuit is open or half-open (not yet closed by a success).")
            registry.set(open, labels: ["stage": stage.rawValue], to: 0)
        }
    }

    static func report(_ metrics: AttachedMetrics, stage: Stage, circuits: some Collection<CircuitState>) {
        let notClosed = circuits.filter { $0.openUntil != nil }.count
        metrics.report { $0.set(open, labels: ["stage": stage.rawValue], to: Double(notClosed)) }
    }
}
