import AMQP
import Dispatch
import Foundation
import Postgres
import Synchronization

/// The loop every stage worker runs, written once:
/// consume → decode → handle (one transaction per batch) → commit → publish hand-offs with confirm → ack.
///
/// Threads, not tasks: rabbitmq-c and libpq are blocking C libraries. The consumer and the publisher each
/// own one AMQP connection on their own thread (a rabbitmq-c connection is not thread-safe, and broker flow
/// control blocks publishers, so they never share one). Each of `concurrency` lanes owns one PostgreSQL
/// connection and pulls batches from the consumer.
///
/// Crash safety: a delivery is acked only after its database effect committed *and* every message it
/// caused was confirmed by the broker. A crash anywhere before the ack redelivers the message; handlers are
/// idempotent and return the same hand-off for an already-advanced payment, so the next stage is still fed.
public final class StageRuntime<Handler: StageHandler>: Sendable {
    public let handler: Handler
    public let configuration: WorkerConfiguration
    public let logger: Logger
    public let metrics: StageMetrics
    private let databaseConfiguration: PostgresConfiguration
    private let consumer: AMQPConsumer
    private let publisher: AMQPPublisher
    private let router: DeliveryRouter
    private let hooks: RuntimeHooks
    /// Where the spans of handled messages go (`PAYPIPE_OTLP_ENDPOINT`); nil: none are recorded (trace context is still
    /// carried).
    private let exporter: OTLPExporter?
    private let amqpConfiguration: AMQPConfiguration
    private let topology: AMQPTopology
    private let state = Mutex(State())
    /// Each lane's last progress, for `/livez`.
    private let heartbeats = Heartbeats()
    /// The stage side's own components (e.g. the payments' reconciler), given what the runtime lends them.
    private let extraComponents: @Sendable (WorkerContext) -> [any WorkerComponent]

    struct State {
        var started = false
        var stopRequested = false
        var databaseHealthy = true
        var observability: ObservabilityServer?
        /// The running components, until they are stopped.
        var components: ComponentGroup?
    }

    /// `layout`: the deployment's broker objects, declared on every (re)connect; its retry tiers are declared for the
    /// handler's stage only.
    public init(
        handler: Handler, layout: BrokerLayout, configuration: WorkerConfiguration, logger: Logger,
        registry: MetricsRegistry = MetricsRegistry(), hooks: RuntimeHooks = .none,
        components: @escaping @Sendable (WorkerContext) -> [any WorkerComponent] = { _ in [] }
    ) throws {
        self.handler = handler
        extraComponents = components
        self.configuration = configuration
        self.logger = logger
        self.hooks = hooks
        let stage = handler.stageName
        let metrics = StageMetrics(registry: registry, stage: stage)
        self.metrics = metrics
        handler.attach(metrics: registry)
        SpanMetrics.register(in: registry, labels: metrics.labels)
        exporter = configuration.otlp.map { settings in
            var settings = settings
            if settings.serviceName.isEmpty { settings.serviceName = "paypipe-\(stage.rawValue)" }
            return OTLPExporter(settings: settings, registry: registry, labels: metrics.labels, logger: logger)
        }
        databaseConfiguration = try PostgresConfiguration(url: configuration.databaseURL)
        var amqp = try AMQPConfiguration(url: configuration.amqpURL)
        amqp.heartbeatSeconds = configuration.heartbeatSeconds
        amqp.connectionName = "paypipe-\(stage.rawValue)"
        let topology = layout.topology(retrySchedule: configuration.retrySchedule, brokerNodes: amqp.nodes.count, retryStages: [stage])
        self.topology = topology
        var declaring = amqp
        declaring.connectionName = "paypipe-\(stage.rawValue)-declare"
        amqpConfiguration = declaring
        let onEvent: @Sendable (String, AMQPEvent) -> Void = { role, event in
            switch event {
            case .connected(let generation):
                logger.info("amqp_connected", [("role", .string(role)), ("generation", .int(Int(generation)))])
                if generation > 1 { metrics.reconnected("amqp") }
                if role == "consumer" { metrics.brokerUp(true) }
            case .disconnected(let reason):
                logger.warning("amqp_disconnected", [("role", .string(role)), ("reason", .string(reason))])
                if role == "consumer" { metrics.brokerUp(false) }
            case .reconnectScheduled(let attempt, let delay):
                logger.info("amqp_reconnect_scheduled", [("role", .string(role)), ("attempt", .int(attempt)), ("delaySeconds", .double(delay))])
            }
        }
        consumer = AMQPConsumer(
            configuration: amqp, topology: topology, queue: stage.queueName,
            prefetch: configuration.prefetch, onEvent: { onEvent("consumer", $0) })
        var publishing = amqp
        publishing.connectionName = "paypipe-\(stage.rawValue)-publisher"
        publisher = AMQPPublisher(configuration: publishing, topology: topology, onEvent: { onEvent("publisher", $0) })
        router = DeliveryRouter(stage: stage, retrySchedule: configuration.retrySchedule)
    }

    /// Starts the worker's components (``ComponentGroup``), each after those it uses: the health/metrics server, the
    /// publisher, the consumer, the stage side's own components (the reconciler), the lanes. Returns immediately.
    public func start() throws {
        let alreadyStarted = state.withLock { state -> Bool in
            defer { state.started = true }
            return state.started
        }
        guard !alreadyStarted else { return }
        let stage = handler.stageName
        let context = WorkerContext(
            configuration: configuration, logger: logger, metrics: metrics,
            connect: { [self] (database: inout PostgresConnection?) in connectedDatabase(&database) },
            databaseReachable: { [self] in setDatabaseHealthy(true, reason: nil) },
            publish: { [self] handOffs in publishConfirmed(handOffs.map { router.handOff($0) }) },
            isStopRequested: { [self] in isStopRequested })
        let components = ComponentGroup([
            ClosingComponent(name: "observability", start: { [self] in
                let server = try ObservabilityServer(
                    host: configuration.metricsHost, port: configuration.metricsPort, registry: metrics.registry,
                    health: { [weak self] in self?.health() ?? HealthReport(checks: ["runtime": false]) },
                    liveness: { [weak self] in self?.liveness() ?? HealthReport(checks: ["runtime": false]) },
                    readiness: { [weak self] in self?.readiness() ?? HealthReport(checks: ["runtime": false]) })
                state.withLock { $0.observability = server }
            }, close: { [self] in state.withLock { $0.observability }?.stop() }),
        ] + (exporter.map { [$0] } ?? []) + [
            ClosingComponent(name: "publisher", close: { [publisher] in publisher.close() }),
            ClosingComponent(name: "consumer", start: { [self] in
                consumer.start()
                metrics.databaseUp(true)
            }, close: { [consumer] in consumer.close() }),
        ] + extraComponents(context) + [
            // Last, so stopped first: no new deliveries, then the lanes finish what was already delivered to them.
            ThreadsComponent(
                name: "paypipe-\(stage.rawValue)-lane", count: configuration.concurrency,
                body: { [self] lane in runLane(lane) },
                onStop: { [self] in
                    state.withLock { $0.stopRequested = true }
                    consumer.stopConsuming()
                }),
        ])
        try components.start()
        state.withLock { $0.components = components }
        logger.info("worker_started", [
            ("queue", .string(stage.queueName)), ("concurrency", .int(configuration.concurrency)),
            ("prefetch", .int(Int(configuration.prefetch))), ("batchSize", .int(configuration.batchSize)),
            ("batchLingerMs", .double(configuration.batchLingerSeconds * 1000)), ("metricsPort", .int(Int(observabilityPort ?? 0))),
        ])
    }

    /// The port `/healthz`, `/livez`, `/readyz` and `/metrics` listen on (useful when configured as 0).
    public var observabilityPort: UInt16? { state.withLock { $0.observability?.port } }

    /// Begins a graceful stop (SIGTERM): no new deliveries are taken; lanes finish what was already
    /// delivered to this worker, commit, publish and ack it, then exit.
    public func requestStop() {
        let (first, components) = state.withLock { state -> (Bool, ComponentGroup?) in
            defer { state.stopRequested = true }
            return (!state.stopRequested, state.components)
        }
        guard first else { return }
        logger.info("worker_stopping")
        components?.requestStop()
    }

    /// Stops the components in reverse order under one time limit (`PAYPIPE_SHUTDOWN_TIMEOUT`): the lanes drain, the
    /// stage's own components (the reconciler) end, then the consumer, the publisher and the server close. Returns `true` when all in-flight work
    /// drained in time.
    @discardableResult
    public func waitUntilStopped() -> Bool {
        let components = state.withLock { state -> ComponentGroup? in
            defer { state.components = nil }
            return state.components
        }
        guard let components else {
            // Never started: only the connections opened at init are to close.
            consumer.close()
            publisher.close()
            return true
        }
        let late = components.stop(timeout: configuration.shutdownTimeoutSeconds)
        if !late.isEmpty {
            logger.warning("shutdown_timeout", [
                ("timeoutSeconds", .double(configuration.shutdownTimeoutSeconds)), ("components", .string(late.joined(separator: ","))),
            ])
        }
        logger.info("worker_stopped", [("drained", .bool(late.isEmpty))])
        return late.isEmpty
    }

    public func health() -> HealthReport {
        let (stopping, database) = state.withLock { ($0.stopRequested, $0.databaseHealthy) }
        return HealthReport(checks: ["broker": consumer.isConnected, "database": database, "accepting": !stopping])
    }

    /// `/livez`: every lane made progress within `PAYPIPE_LANE_STUCK_AFTER` (``LivenessPolicy``); outages do not count.
    public func liveness() -> HealthReport {
        LivenessPolicy(stuckAfterSeconds: configuration.laneStuckAfterSeconds).report(secondsSinceProgress: heartbeats.secondsSinceProgress())
    }

    /// `/readyz`: consumer attached, publisher connected, database reachable at the latest operation, not stopping.
    public func readiness() -> HealthReport {
        let (stopping, database) = state.withLock { ($0.stopRequested, $0.databaseHealthy) }
        return Readiness(consumerAttached: consumer.isConsuming, publisherConnected: publisher.isConnected,
                         databaseReachable: database, stopping: stopping).report
    }

    private var isStopRequested: Bool { state.withLock { $0.stopRequested } }

    // MARK: - Lanes

    private func runLane(_ lane: Int) {
        var database: PostgresConnection?
        let fill = BatchFill(limit: configuration.batchSize, linger: configuration.batchLingerSeconds)
        let name = "lane-\(lane)"
        let beat: @Sendable () -> Void = { [heartbeats] in heartbeats.beat(name) }
        var first = true
        while true {
            beat()
            let deliveries = receiveBatch(fill, first: first)
            if deliveries.isEmpty {
                if isStopRequested { break }
                continue
            }
            first = false
            handleBatch(deliveries, database: &database, beat: beat)
        }
        heartbeats.finished(name)
        database?.close()
    }

    /// Up to a batch of deliveries, or none after 0.2 s without any; `fill` says how long a busy (or, `first`, a
    /// just started) lane waits for more.
    private func receiveBatch(_ fill: BatchFill, first: Bool) -> [AMQPDelivery] {
        var deliveries = consumer.receive(maxCount: fill.limit, timeout: 0)
        let foundWaiting = deliveries.count
        if foundWaiting == 0 {
            deliveries = consumer.receive(maxCount: fill.limit, timeout: 0.2)
            guard !deliveries.isEmpty else { return [] }
        }
        let received = DispatchTime.now()
        while case .wait(let more, let seconds) = fill.next(count: deliveries.count, foundWaiting: foundWaiting,
                                                            elapsed: Self.seconds(from: received, to: DispatchTime.now()),
                                                            first: first) {
            let next = consumer.receive(maxCount: more, timeout: seconds)
            guard !next.isEmpty else { break }  // the linger passed, or the consumer shut down
            deliveries += next
        }
        return deliveries
    }

    /// `beat`: the lane's heartbeat, also given on every retry through an outage (waiting is progress for `/livez`).
    private func handleBatch(_ received: [AMQPDelivery], database: inout PostgresConnection?, beat: @Sendable () -> Void) {
        let started = DispatchTime.now()
        let startedAt = Date()
        let deliveries = received.map(router.admitted)
        metrics.consumed(deliveries.count)
        metrics.inFlight(deliveries.count)
        defer { metrics.inFlight(-deliveries.count) }

        var outbound: [AMQPOutboundMessage] = []
        var decoded: [(delivery: AMQPDelivery, message: Handler.Message, trace: DeliveryTrace)] = []
        var finished: [FinishedMessage] = []
        for delivery in deliveries {
            let trace = DeliveryTrace.of(delivery)
            switch admit(delivery, trace: trace) {
            case .success(let message): decoded.append((delivery, message, trace))
            case .failure(let failure):
                outbound.append(deadLetter(delivery, failure, trace: trace))
                finished.append(FinishedMessage(delivery: delivery, trace: trace, result: .failure(failure), attributes: []))
            }
        }

        if !decoded.isEmpty {
            guard let results = process(decoded.map(\.message), database: &database, beat: beat) else {
                return  // stopping while the database is down: leave unacked, the broker redelivers
            }
            #if DEBUG
            do {
                try hooks.afterCommit()
            } catch {
                logger.warning("batch_abandoned_after_commit", [("messages", .int(decoded.count))])
                return
            }
            #endif
            for (index, result) in results.enumerated() {
                let item = decoded[index]
                outbound.append(contentsOf: route(result, for: item.delivery, trace: item.trace).map(item.trace.stamped))
                // Bounded like `messageId`: an invalid job's ids are the publisher's text, unchecked.
                finished.append(FinishedMessage(delivery: item.delivery, trace: item.trace, result: result,
                                                attributes: handler.spanAttributes(of: item.message).map { SpanAttribute($0.key, String($0.value.prefix(128))) }))
            }
        }

        let handled = DispatchTime.now()
        guard publishConfirmed(outbound, beat: beat) else { return }
        let published = DispatchTime.now()
        consumer.ack(deliveries)  // one command and one wake-up of the consumer thread for the batch
        metrics.acked(deliveries.count)
        let phases = BatchPhases(handle: Self.seconds(from: started, to: handled), publish: Self.seconds(from: handled, to: published),
                                 ack: Self.seconds(from: published, to: DispatchTime.now()))
        metrics.handled(batch: deliveries.count, phases: phases)
        end(finished, startedAt: startedAt, seconds: phases.total)
        hooks.afterBatch(phases.total)
    }

    /// After the ack: a `message_handled` line for each message that succeeded (failures were logged when routed), and
    /// each message's span, which covers its batch from receipt to ack.
    private func end(_ finished: [FinishedMessage], startedAt: Date, seconds: Double) {
        let endedAt = startedAt.addingTimeInterval(seconds)
        for message in finished {
            let ending = message.ending
            if case .success = message.result {
                logger.info("message_handled", fields(of: message.delivery, trace: message.trace) + [("outcome", .string(ending.outcome))]
                            + message.attributes.map { ($0.key, LogValue.string($0.value)) } + [("durationMs", .double(seconds * 1000))])
            }
            guard let exporter else { continue }
            var attributes = [SpanAttribute("paypipe.stage", handler.stageName.rawValue), SpanAttribute("paypipe.outcome", ending.outcome)]
            if let messageId = message.delivery.properties.messageId { attributes.append(SpanAttribute("messaging.message.id", String(messageId.prefix(128)))) }
            exporter.record(Span(name: handler.stageName.rawValue, context: message.trace.context, parentSpanId: message.trace.parentSpanId,
                                 start: startedAt, end: endedAt, status: ending.status, attributes: attributes + message.attributes))
        }
    }

    private static func seconds(from start: DispatchTime, to end: DispatchTime) -> Double {
        Double(end.uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }

    /// Size limit, crash-loop guard and decoding: everything decided before touching the database.
    private func admit(_ delivery: AMQPDelivery, trace: DeliveryTrace) -> Result<Handler.Message, StageFailure> {
        if delivery.body.count > configuration.maxMessageBytes {
            return .failure(.unattributable(
                code: "message_too_large",
                reason: "message of \(delivery.body.count) bytes exceeds the limit of \(configuration.maxMessageBytes) bytes"))
        }
        if delivery.deliveryCount >= BrokerLayout.runtimeRedeliveryLimit {
            return .failure(.unattributable(
                code: "redelivery_limit",
                reason: "delivered \(delivery.deliveryCount) times without being acknowledged (crash loop?)"))
        }
        do {
            return .success(try handler.decode(InboundMessage(delivery, previousRetries: router.previousRetries(of: delivery), trace: trace.context)))
        } catch {
            return .failure(error)
        }
    }

    /// Runs the handler, holding the batch across database outages: reconnects with backoff and retries
    /// the messages whose result was `databaseUnavailable`. Returns `nil` if asked to stop meanwhile.
    private func process(
        _ messages: [Handler.Message], database: inout PostgresConnection?, beat: @Sendable () -> Void
    ) -> [Result<StageOutcome, StageFailure>]? {
        var results = [Result<StageOutcome, StageFailure>?](repeating: nil, count: messages.count)
        var attempt = 0
        while true {
            let pending = results.indices.filter { index in
                guard let result = results[index] else { return true }
                if case .failure(.databaseUnavailable) = result { return true }
                return false
            }
            if pending.isEmpty { return results.map { $0! } }
            if attempt > 0 {
                if isStopRequested { return nil }
                let delay = AMQPBackoff(baseSeconds: 0.2, capSeconds: 5).delay(forAttempt: attempt)
                Thread.sleep(forTimeInterval: delay)
                beat()
            }
            attempt += 1
            guard let connection = connectedDatabase(&database) else { continue }
            let batch = pending.map { messages[$0] }
            for (offset, result) in handler.process(batch, database: connection).enumerated() {
                results[pending[offset]] = result
            }
            if case .failure(.databaseUnavailable(let reason))? = pending.first.flatMap({ results[$0] }) {
                setDatabaseHealthy(false, reason: reason)
                if !connection.isConnected { database = nil }
            } else {
                setDatabaseHealthy(true, reason: nil)
            }
        }
    }

    private func connectedDatabase(_ database: inout PostgresConnection?) -> PostgresConnection? {
        if let connection = database, connection.isConnected { return connection }
        database?.close()
        database = nil
        do {
            let connection = try PostgresConnection(configuration: databaseConfiguration)
            database = connection
            if !state.withLock({ $0.databaseHealthy }) { metrics.reconnected("postgres") }
            return connection
        } catch {
            setDatabaseHealthy(false, reason: String(describing: error))
            return nil
        }
    }

    private func setDatabaseHealthy(_ healthy: Bool, reason: String?) {
        let changed = state.withLock { state -> Bool in
            defer { state.databaseHealthy = healthy }
            return state.databaseHealthy != healthy
        }
        metrics.databaseUp(healthy)
        guard changed else { return }
        if healthy {
            logger.info("database_recovered")
        } else {
            logger.error("database_unavailable", [("reason", .string(reason ?? "unknown"))])
        }
    }

    /// Turns one handler result into the messages to publish before acking.
    private func route(_ result: Result<StageOutcome, StageFailure>, for delivery: AMQPDelivery, trace: DeliveryTrace) -> [AMQPOutboundMessage] {
        switch result {
        case .success(.handOff(let handOff)):
            return [router.handOff(handOff)]
        case .success(.completed):
            return []
        case .success(.settled(let note, let reason)):
            logger.info("message_settled", fields(of: delivery, trace: trace) + [("note", .string(note)), ("reason", .string(reason))])
            return []
        case .success(.publish(let messages)):
            return messages.map { message in
                // A retry copy among the publications is counted and logged as a failure's retry is.
                if case .retry(let inbound, let failure) = message { return retryOrDeadLetter(inbound.delivery, failure, trace: trace) }
                return router.message(for: message)
            }
        case .failure(let failure):
            switch failure {
            case .unattributable, .permanent:
                return [deadLetter(delivery, failure, trace: trace)]
            case .transient, .waiting, .databaseUnavailable:
                return [retryOrDeadLetter(delivery, failure, trace: trace)]
            }
        }
    }

    private func retryOrDeadLetter(_ delivery: AMQPDelivery, _ failure: StageFailure, trace: DeliveryTrace) -> AMQPOutboundMessage {
        let (message, exhausted) = router.retry(delivery, after: failure)
        if exhausted {
            metrics.deadLettered(code: "retries_exhausted")
            logger.error("retries_exhausted", fields(of: delivery, trace: trace) + [("code", .string(failure.code)), ("reason", .string(failure.reason))])
        } else {
            metrics.retried(code: failure.code)
            logger.warning("retry_scheduled", fields(of: delivery, trace: trace) + [("code", .string(failure.code)), ("reason", .string(failure.reason)), ("queue", .string(message.routingKey))])
        }
        return message
    }

    private func deadLetter(_ delivery: AMQPDelivery, _ failure: StageFailure, trace: DeliveryTrace) -> AMQPOutboundMessage {
        metrics.deadLettered(code: failure.code)
        logger.error("dead_lettered", fields(of: delivery, trace: trace) + [("code", .string(failure.code)), ("reason", .string(failure.reason))])
        return router.deadLetter(delivery, code: failure.code, reason: failure.reason)
    }

    private func fields(of delivery: AMQPDelivery, trace: DeliveryTrace) -> [(String, LogValue)] {
        var fields: [(String, LogValue)] = [("deliveryTag", .int(Int(delivery.deliveryTag)))]
        if let messageId = delivery.properties.messageId { fields.append(("messageId", .string(String(messageId.prefix(128))))) }
        return fields + trace.logFields
    }

    /// Publishes with confirms, retrying through broker outages (the publisher reconnects by itself).
    /// Returns `false` only when stopping before the broker confirmed: the deliveries then stay unacked
    /// and are redelivered, which idempotent handlers turn into the same publishes again.
    ///
    /// A mandatory message the broker returns as unroutable (a queue or binding deleted under the running worker; the
    /// publisher declares the topology only when it connects) does not make this retry the same publish forever:
    /// see ``reroute(_:)``.
    private func publishConfirmed(_ messages: [AMQPOutboundMessage], beat: @Sendable () -> Void = {}) -> Bool {
        guard !messages.isEmpty else { return true }
        var pending = messages
        var attempt = 0
        while true {
            do {
                try publisher.publish(pending, timeout: 30)
                return true
            } catch {
                logger.error("publish_failed", [("messages", .int(pending.count)), ("error", .string(String(describing: error))), ("attempt", .int(attempt))])
                if case .unroutable = error, let rest = reroute(pending) {
                    if rest.isEmpty { return true }
                    pending = rest
                }
                // A nack does not heal on the same channel after a quorum queue lost its leader: retry on a new one.
                if case .nacked = error { publisher.reconnect() }
                if isStopRequested { return false }
                attempt += 1
                Thread.sleep(forTimeInterval: AMQPBackoff(baseSeconds: 0.5, capSeconds: 10).delay(forAttempt: attempt))
                beat()
            }
        }
    }

    /// After an unroutable publish: re-declares the topology once, publishes the messages one by one to learn which
    /// ones still have no route, and replaces each of those by its `unroutable` dead letter in this stage's DLQ (which
    /// the declaration just made sure exists). Returns what is still to be published (`[]`: everything confirmed), or
    /// `nil` when the topology could not be declared (the broker is unwell: the caller backs off as for any failure).
    /// A dead letter that is itself unroutable stays pending, so nothing is lost, but it is never re-wrapped. Messages
    /// of the batch that were routed the first time are published again: duplicates, as after any reconnect.
    private func reroute(_ messages: [AMQPOutboundMessage]) -> [AMQPOutboundMessage]? {
        do {
            let connection = try AMQPConnection(configuration: amqpConfiguration)
            defer { connection.close() }
            try connection.declare(topology)
            logger.warning("topology_redeclared", [("reason", .string("unroutable publish"))])
        } catch {
            logger.error("topology_redeclare_failed", [("error", .string(String(describing: error)))])
            return nil
        }
        var rest: [AMQPOutboundMessage] = []
        for (message, failure) in zip(messages, publisher.publishEach(messages, timeout: 30)) {
            guard let failure else { continue }
            guard case .unroutable = failure, !router.isDeadLetter(message) else {
                rest.append(message)
                continue
            }
            metrics.deadLettered(code: "unroutable")
            logger.error("dead_lettered", [
                ("code", .string("unroutable")), ("exchange", .string(message.exchange)), ("routingKey", .string(message.routingKey)),
            ] + (message.properties.messageId.map { [("messageId", LogValue.string(String($0.prefix(128))))] } ?? []))
            rest.append(router.unroutable(message, reason: "no queue took the message after the topology was re-declared: \(failure)"))
        }
        guard !rest.isEmpty else { return [] }
        // The dead letters (and anything that failed otherwise) once more; whatever still fails goes back to the caller.
        return zip(rest, publisher.publishEach(rest, timeout: 30)).compactMap { $1 == nil ? nil : $0 }
    }
}
