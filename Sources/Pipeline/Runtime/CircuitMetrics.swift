/// `paypipe_circuits_open{stage}`: how many endpoints' circuits a worker's ``EndpointGate`` holds not closed (open,
/// or half-open and waiting for a success) — the gateway's in submit, the webhook endpoints' in notify. 0 from the
/// start.
enum CircuitMetrics {
    static let open = "paypipe_circuits_open"

    static func attach(_ metrics: AttachedMetrics, to registry: MetricsRegistry, stage: Stage) {
        metrics.attach(registry) { registry in
            registry.register(open, kind: .gauge, help: "Endpoints whose circuit is open or half-open (not yet closed by a success).")
            registry.set(open, labels: ["stage": stage.rawValue], to: 0)
        }
    }
}
