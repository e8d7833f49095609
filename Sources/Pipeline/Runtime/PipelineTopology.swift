import AMQP

/// Every exchange, queue and binding of the pipeline, declared (idempotently) by each worker on every
/// (re)connect, so a fresh broker or a deleted queue heals itself.
///
/// RabbitMQ 3.10 (Debian's) specifics are explicit here: quorum queues get `x-delivery-limit` (3.10 has no
/// default) with a dead-letter target as the crash-loop safety net, and queues that dead-letter use
/// `x-dead-letter-strategy=at-least-once` + `x-overflow=reject-publish` so that dead letters are confirmed
/// by the broker and expiring retries are never lost.
public enum PipelineTopology {
    /// Ingress exchange backends publish jobs to.
    public static let jobsExchange = "paypipe.jobs"
    public static let jobRoutingKey = "payment.requested"
    /// Internal direct exchange for stage hand-offs; routing key = stage name.
    public static let stagesExchange = "paypipe.stages"
    /// Topic exchange of payment results, routing key = event type (`payment.authorized`, …).
    public static let resultsExchange = "paypipe.results"
    /// Broker-side safety net: a message redelivered this often (e.g. it crashes its worker) is
    /// dead-lettered by RabbitMQ itself. The runtime dead-letters earlier, with reasons, at
    /// ``runtimeRedeliveryLimit``.
    public static let deliveryLimit: Int64 = 25
    public static let runtimeRedeliveryLimit = 20

    /// `brokerNodes`: how many nodes `PAYPIPE_AMQP_URL` lists. With more than one, new quorum queues get
    /// `x-quorum-initial-group-size = min(3, brokerNodes)` (three replicas survive one node loss; more only cost
    /// writes). With one address (a single broker, or a load balancer in front of a cluster) the argument is left
    /// out and RabbitMQ's default applies. It is a creation-only argument (``AMQP/AMQPQueue/creationArguments``):
    /// RabbitMQ 3.10 compares it on redeclaration, so a queue that exists from before keeps its replicas and is
    /// still accepted; existing queues grow with `rabbitmq-queues grow` (docs/scaling.md).
    ///
    /// `retryStages`: the stages whose retry tiers (of `retrySchedule`) are declared. A worker retries only its own
    /// stage, and its schedule is its own (notify's is the webhook schedule), so a worker passes its stage alone:
    /// declaring every stage's tiers with one worker's schedule made queues no worker uses. Every stage's queue and
    /// dead-letter queue are declared whatever `retryStages` says (hand-offs and dead letters go there).
    public static func topology(retrySchedule: RetrySchedule, brokerNodes: Int = 1, retryStages: [Stage] = Stage.allCases) -> AMQPTopology {
        let replicas: [String: AMQPFieldValue] = brokerNodes > 1 ? [initialGroupSizeArgument: .int(Int64(min(3, brokerNodes)))] : [:]
        var queues: [AMQPQueue] = []
        var bindings: [AMQPBinding] = []
        for stage in Stage.allCases {
            queues.append(AMQPQueue(name: stage.queueName, durable: true, arguments: quorum.merging([
                "x-delivery-limit": .int(deliveryLimit),
                "x-dead-letter-exchange": .string(""),
                "x-dead-letter-routing-key": .string(stage.deadLetterQueueName),
            ], uniquingKeysWith: { $1 }), creationArguments: replicas))
            queues.append(AMQPQueue(name: stage.deadLetterQueueName, durable: true, arguments: ["x-queue-type": .string("quorum")],
                                    creationArguments: replicas))
            for tier in retrySchedule.delays.indices where retryStages.contains(stage) {
                queues.append(AMQPQueue(
                    name: retrySchedule.queueName(stage: stage, tier: tier), durable: true,
                    arguments: quorum.merging([
                        "x-message-ttl": .int(Int64(retrySchedule.delays[tier] * 1000)),
                        "x-dead-letter-exchange": .string(stagesExchange),
                        "x-dead-letter-routing-key": .string(stage.rawValue),
                    ], uniquingKeysWith: { $1 }), creationArguments: replicas))
            }
            bindings.append(AMQPBinding(queue: stage.queueName, exchange: stagesExchange, routingKey: stage.rawValue))
        }
        bindings.append(AMQPBinding(queue: Stage.decrypt.queueName, exchange: jobsExchange, routingKey: jobRoutingKey))
        // Capture, void and refund jobs (docs/job-contract.md "Operations"), consumed apart from the AUTH path.
        for kind in OperationRequest.Kind.allCases {
            bindings.append(AMQPBinding(queue: Stage.operations.queueName, exchange: jobsExchange, routingKey: kind.routingKey))
        }
        return AMQPTopology(
            exchanges: [
                AMQPExchange(name: jobsExchange, kind: .direct, durable: true),
                AMQPExchange(name: stagesExchange, kind: .direct, durable: true),
                AMQPExchange(name: resultsExchange, kind: .topic, durable: true),
            ],
            queues: queues,
            bindings: bindings)
    }

    /// The exchanges the topology declares: the only places `paypipe dlq replay` sends a dead letter back to. A recorded
    /// origin is header data (a worker's, or a publisher's on the default exchange, i.e. straight into any queue), so
    /// anything else is refused rather than followed.
    public static let exchangeNames: Set<String> = [jobsExchange, stagesExchange, resultsExchange]

    public static func isReplayTarget(exchange: String) -> Bool {
        exchangeNames.contains(exchange)
    }

    public static let initialGroupSizeArgument = "x-quorum-initial-group-size"

    /// Arguments shared by every queue that dead-letters.
    private static let quorum: [String: AMQPFieldValue] = [
        "x-queue-type": .string("quorum"),
        "x-dead-letter-strategy": .string("at-least-once"),
        "x-overflow": .string("reject-publish"),
    ]
}
