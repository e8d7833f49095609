import AMQP

/// Every exchange, queue and binding of the payment pipeline: the runtime's layout (``BrokerLayout``: the jobs and
/// stages exchanges, each stage's queues) for every ``Stage``, the results exchange, and the routes of the jobs —
/// authorisation jobs to decrypt, capture, void and refund jobs to operations. Each worker declares it on every
/// (re)connect.
public enum PipelineTopology {
    /// Ingress exchange backends publish jobs to.
    public static let jobsExchange = BrokerLayout.jobsExchange
    public static let jobRoutingKey = "payment.requested"
    /// Internal direct exchange for stage hand-offs; routing key = stage name.
    public static let stagesExchange = BrokerLayout.stagesExchange
    /// Topic exchange of payment results, routing key = event type (``ResultsExchange/name``).
    public static let resultsExchange = ResultsExchange.name

    /// See ``ResultsExchange/merchantKey(type:merchantId:)``.
    public static func merchantResultsKey(type: String, merchantId: String) -> String {
        ResultsExchange.merchantKey(type: type, merchantId: merchantId)
    }
    /// See ``BrokerLayout/deliveryLimit``.
    public static let deliveryLimit = BrokerLayout.deliveryLimit
    public static let runtimeRedeliveryLimit = BrokerLayout.runtimeRedeliveryLimit

    /// What the runtime declares for the payment pipeline.
    public static let layout = BrokerLayout(
        stages: Stage.allCases.map(\.name),
        exchanges: [AMQPExchange(name: resultsExchange, kind: .topic, durable: true)],
        bindings: [AMQPBinding(queue: Stage.decrypt.queueName, exchange: jobsExchange, routingKey: jobRoutingKey)]
            // Capture, void and refund jobs (docs/job-contract.md "Operations"), consumed apart from the AUTH path.
            + OperationRequest.Kind.allCases.map { AMQPBinding(queue: Stage.operations.queueName, exchange: jobsExchange, routingKey: $0.routingKey) }
            // A deferred payment's amount (docs/job-contract.md "Deferred payments (amount set later)").
            + [AMQPBinding(queue: Stage.operations.queueName, exchange: jobsExchange, routingKey: CompletionRequest.routingKey)])

    /// The pipeline's topology (``BrokerLayout/topology(retrySchedule:brokerNodes:retryStages:)``), with the retry tiers of
    /// `retryStages` (every stage by default).
    public static func topology(retrySchedule: RetrySchedule, brokerNodes: Int = 1, retryStages: [Stage] = Stage.allCases) -> AMQPTopology {
        layout.topology(retrySchedule: retrySchedule, brokerNodes: brokerNodes, retryStages: retryStages.map(\.name))
    }

    /// The exchanges the topology declares: the only places `paypipe dlq replay` sends a dead letter back to. A recorded
    /// origin is header data (a worker's, or a publisher's on the default exchange, i.e. straight into any queue), so
    /// anything else is refused rather than followed.
    public static let exchangeNames: Set<String> = layout.exchangeNames

    public static func isReplayTarget(exchange: String) -> Bool {
        exchangeNames.contains(exchange)
    }

    public static let initialGroupSizeArgument = BrokerLayout.initialGroupSizeArgument
}
