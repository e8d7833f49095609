import AMQP
import Foundation

// The payment side's terms for the runtime's: a ``Stage`` is a ``StageName``, a hand-off of a ``StageMessage`` (or of an
// ``OperationEventMessage``) is a ``HandOffMessage``, and the pipeline's broker objects are ``PipelineTopology/layout``.
// The runtime itself names no payment type (scripts/check-modules).

extension Stage {
    /// The stage as the runtime names it: its queues, its routing key, its `stage` label.
    public var name: StageName { StageName(rawValue) }

    /// The stage's work queue, e.g. `paypipe.authorize`.
    public var queueName: String { name.queueName }

    /// Where the runtime copies messages it cannot process (with `x-paypipe-error-code` headers).
    public var deadLetterQueueName: String { name.deadLetterQueueName }
}

/// A handler of one of the pipeline's stages, which names it to the runtime.
public protocol PaymentStageHandler: StageHandler {
    var stage: Stage { get }
}

extension PaymentStageHandler {
    public var stageName: StageName { stage.name }
}

extension HandOffMessage {
    /// The hand-off of `message` to `stage`: `message_id` `<paymentId>:<stage>` (one per payment and stage, which
    /// consumers dedupe on), the message's JSON as its body, and the trace its payment's row kept when it was built from
    /// the row (``StageMessage/traceparent``; a malformed stored value is no trace, as for a delivery).
    public init(_ stage: Stage, _ message: StageMessage) {
        self.init(to: stage.name, id: "\(message.paymentId.paymentIDText):\(stage.rawValue)", body: message.encoded(),
                  trace: TraceContext.parse(traceparent: message.traceparent, tracestate: message.tracestate))
    }

    /// The hand-off of a finished operation to `notify` (``OperationEventMessage``), in the trace its payment's row kept
    /// when it was built from the row.
    public init(_ operation: OperationEventMessage) {
        self.init(to: Stage.notify.name, id: operation.id, body: operation.encoded(),
                  trace: TraceContext.parse(traceparent: operation.payment.traceparent, tracestate: operation.payment.tracestate))
    }

    /// The stage it goes to, when it is one of the pipeline's.
    public var stage: Stage? { Stage(rawValue: target.rawValue) }

    /// The stage message it carries, when its body is one.
    public var message: StageMessage? { try? StageMessage.decode(body) }
}

extension StageOutcome {
    /// Hand `message` to `stage` (with confirm) before acking.
    public static func handOff(to stage: Stage, _ message: StageMessage) -> StageOutcome {
        .handOff(HandOffMessage(stage, message))
    }
}

extension OutboundMessage {
    /// Hand `message` to `stage` (with confirm), among a stage's other publications.
    public static func handOff(to stage: Stage, _ message: StageMessage) -> OutboundMessage {
        .handOff(HandOffMessage(stage, message))
    }
}

extension WorkerContext {
    /// Publishes the hand-offs with confirms, retrying through broker outages; `false` only when stopping first.
    public func publish(_ handOffs: [(stage: Stage, message: StageMessage)]) -> Bool {
        publish(handOffs.map { HandOffMessage($0.stage, $0.message) })
    }
}

extension DeliveryRouter {
    public init(stage: Stage, retrySchedule: RetrySchedule) {
        self.init(stage: stage.name, retrySchedule: retrySchedule)
    }

    /// A persistent hand-off of `message` to `target`, through the stages exchange.
    public func handOff(_ message: StageMessage, to target: Stage) -> AMQPOutboundMessage {
        handOff(HandOffMessage(target, message))
    }
}

extension EndpointGate {
    /// - Parameter stage: the `stage` label of its `paypipe_circuits_open` series.
    public convenience init(policy: EndpointGatePolicy = EndpointGatePolicy(), stage: Stage, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.init(policy: policy, stage: stage.name, clock: clock)
    }
}

extension InboundMessage {
    /// A message as `stage`'s queue would deliver it, for driving a handler without a broker (tests, tools): a
    /// hand-off from the stages exchange.
    public init(body: [UInt8], to stage: Stage, publishedAt: Date? = nil, redelivered: Bool = false, previousRetries: Int = 0) {
        self.init(body: body, to: stage.name, publishedAt: publishedAt, redelivered: redelivered, previousRetries: previousRetries)
    }
}

extension RetrySchedule {
    /// Name of the tier queue for `stage`, e.g. `paypipe.submit.retry.30s`.
    public func queueName(stage: Stage, tier: Int) -> String {
        queueName(for: stage.name, tier: tier)
    }
}

extension StageMetrics {
    public init(registry: MetricsRegistry, stage: Stage) {
        self.init(registry: registry, stage: stage.name)
    }
}

extension WorkerConfiguration {
    /// Gateway calls one submit worker runs at once (`PAYPIPE_GATEWAY_CONCURRENCY`).
    public static let defaultGatewayConcurrency = 32

    /// Default metrics port per stage, so several workers can share one host without configuration.
    public static func defaultMetricsPort(for stage: Stage?) -> UInt16 {
        switch stage {
        case .decrypt: 9101
        case .authorize: 9102
        case .submit: 9103
        case .notify: 9104
        case .operations: 9105
        case nil: 9100
        }
    }

    /// A worker's configuration (`stage`), or the CLI's (`nil`): the runtime's settings, and the payment side's checks.
    public init(stage: Stage?, environment reader: EnvironmentReader = EnvironmentReader()) throws(ConfigurationError) {
        try self.init(defaultMetricsPort: Self.defaultMetricsPort(for: stage), environment: reader)
        // Every worker, not only decrypt: a production deployment that sets the sandbox root anywhere is misconfigured.
        if stage != nil { _ = try TrustRootPolicy.replacementPath(reader, deployment: environment) }
    }
}

extension StageRuntime {
    /// A worker of the payment pipeline, declaring its topology (``PipelineTopology/layout``).
    public convenience init(
        handler: Handler, configuration: WorkerConfiguration, logger: Logger,
        registry: MetricsRegistry = MetricsRegistry(), hooks: RuntimeHooks = .none,
        components: @escaping @Sendable (WorkerContext) -> [any WorkerComponent] = { _ in [] }
    ) throws {
        try self.init(handler: handler, layout: PipelineTopology.layout, configuration: configuration, logger: logger,
                      registry: registry, hooks: hooks, components: components)
    }
}

extension WorkerLauncher {
    /// Runs a worker of `stage` of the payment pipeline until signalled (see the runtime's
    /// ``run(stage:layout:environment:registry:variables:configure:components:makeHandler:)``); its `--help` lists the
    /// stage's entries of ``ConfigurationCatalogue``.
    public static func run<Handler: StageHandler>(
        stage: Stage, environment: EnvironmentReader = EnvironmentReader(), registry: MetricsRegistry = MetricsRegistry(),
        components: @escaping @Sendable (Handler) -> @Sendable (WorkerContext) -> [any WorkerComponent] = { _ in { _ in [] } },
        makeHandler: (WorkerConfiguration, Logger) throws -> Handler
    ) -> Never {
        run(stage: stage.name, layout: PipelineTopology.layout, environment: environment, registry: registry,
            variables: ConfigurationCatalogue.production,
            configure: { reader throws(ConfigurationError) in try WorkerConfiguration(stage: stage, environment: reader) },
            components: components, makeHandler: makeHandler)
    }
}

extension StageMessage {
    /// What a stage's span and `message_handled` line name (``StageHandler/spanAttributes(of:)``).
    public var spanAttributes: [SpanAttribute] {
        [SpanAttribute("paymentId", paymentId.paymentIDText), SpanAttribute("jobId", jobId), SpanAttribute("merchantId", merchantId)]
    }
}
