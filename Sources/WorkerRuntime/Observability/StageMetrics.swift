/// The runtime's metric names, registered once per process and labelled by stage, so every worker
/// exports the same series and dashboards/alerts work for any stage. The stage side adds its own next to them (the
/// payments' reconciler: Pipeline's `PaymentMetrics`), labelled the same way (``labels``).
public struct StageMetrics: Sendable {
    public let registry: MetricsRegistry
    public let stage: StageName
    /// The `stage` label every series of the worker carries.
    public var labels: [String: String] { ["stage": stage.rawValue] }

    public enum Name {
        public static let consumed = "paypipe_messages_consumed_total"
        public static let acked = "paypipe_messages_acked_total"
        public static let retried = "paypipe_messages_retried_total"
        public static let deadLettered = "paypipe_messages_dead_lettered_total"
        public static let handlerSeconds = "paypipe_handler_duration_seconds"
        public static let batchSize = "paypipe_batch_size"
        public static let batchPhaseSeconds = "paypipe_batch_phase_seconds"
        public static let inFlight = "paypipe_in_flight_messages"
        public static let reconnects = "paypipe_reconnects_total"
        public static let databaseUp = "paypipe_database_up"
        public static let brokerUp = "paypipe_broker_up"
    }

    public init(registry: MetricsRegistry, stage: StageName) {
        self.registry = registry
        self.stage = stage
        registry.register(Name.consumed, kind: .counter, help: "Deliveries received from the stage queue.")
        registry.register(Name.acked, kind: .counter, help: "Deliveries acknowledged after their effect was committed and hand-offs confirmed.")
        registry.register(Name.retried, kind: .counter, help: "Deliveries sent to a delayed-retry tier, by error code.")
        registry.register(Name.deadLettered, kind: .counter, help: "Deliveries copied to the dead-letter queue, by error code.")
        registry.register(Name.handlerSeconds, kind: .histogram, help: "Time to handle and commit one batch, per message.")
        registry.register(Name.batchSize, kind: .histogram, help: "Deliveries handled per batch.", buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500])
        registry.register(Name.batchPhaseSeconds, kind: .histogram,
                          help: "Time one batch spent in each phase of its lane: handle (decode, database, call-outs), publish (until the broker confirmed), ack.")
        registry.register(Name.inFlight, kind: .gauge, help: "Deliveries received and not yet acknowledged.")
        registry.register(Name.reconnects, kind: .counter, help: "Reconnections to the broker or the database.")
        registry.register(Name.databaseUp, kind: .gauge, help: "1 while the last database operation succeeded.")
        registry.register(Name.brokerUp, kind: .gauge, help: "1 while the consuming connection is up.")
        // The stage's series exist from start-up at zero: a worker's first batch then counts in rate() and increase(),
        // and an idle stage reads 0 on a dashboard rather than no data.
        for name in [Name.consumed, Name.acked, Name.handlerSeconds, Name.batchSize, Name.inFlight] { registry.zero(name, labels: labels) }
        for phase in BatchPhases.names { registry.zero(Name.batchPhaseSeconds, labels: labels.merging(["phase": phase]) { $1 }) }
        BuildInfo.current.register(in: registry)
    }

    public func consumed(_ count: Int) { registry.increment(Name.consumed, labels: labels, by: Double(count)) }
    public func acked(_ count: Int) { registry.increment(Name.acked, labels: labels, by: Double(count)) }
    public func retried(code: String) { registry.increment(Name.retried, labels: labels.merging(["code": code]) { $1 }) }
    public func deadLettered(code: String) { registry.increment(Name.deadLettered, labels: labels.merging(["code": code]) { $1 }) }
    /// One batch acked: its size, its time per message, and where that time went (the phases add up to it).
    public func handled(batch: Int, phases: BatchPhases) {
        registry.observe(Name.batchSize, labels: labels, Double(batch))
        for _ in 0..<batch { registry.observe(Name.handlerSeconds, labels: labels, phases.total / Double(max(batch, 1))) }
        for (phase, seconds) in zip(BatchPhases.names, [phases.handle, phases.publish, phases.ack]) {
            registry.observe(Name.batchPhaseSeconds, labels: labels.merging(["phase": phase]) { $1 }, seconds)
        }
    }
    public func inFlight(_ delta: Int) { registry.increment(Name.inFlight, labels: labels, by: Double(delta)) }
    public func reconnected(_ service: String) { registry.increment(Name.reconnects, labels: labels.merging(["service": service]) { $1 }) }
    public func databaseUp(_ up: Bool) { registry.set(Name.databaseUp, labels: labels, to: up ? 1 : 0) }
    public func brokerUp(_ up: Bool) { registry.set(Name.brokerUp, labels: labels, to: up ? 1 : 0) }
}

/// Seconds one batch spent in each phase of a lane, so an operator sees whether a stage waits on its own work (the
/// database, the gateway) or on the broker's confirms.
public struct BatchPhases: Sendable, Equatable {
    /// Admission, decoding and the handler: its transactions and, for a calling stage, its call-outs.
    public var handle: Double
    /// Publishing the batch's hand-offs, retries and dead letters until the broker confirmed them.
    public var publish: Double
    public var ack: Double
    /// The `phase` label of each, in the order of the lane.
    public static let names = ["handle", "publish", "ack"]

    public init(handle: Double, publish: Double, ack: Double) {
        (self.handle, self.publish, self.ack) = (handle, publish, ack)
    }

    public var total: Double { handle + publish + ack }
}
