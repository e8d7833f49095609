import AMQP

/// The broker objects a deployment's workers declare (idempotently) on every (re)connect, so a fresh broker or a
/// deleted queue heals itself: the runtime's own — the jobs and stages exchanges, and each stage's queue, dead-letter
/// queue and retry tiers — plus whatever the deployment adds (its other exchanges, the bindings of its jobs). The
/// stage side lists its stages and additions; the runtime renders the queues, whose arguments it relies on.
///
/// RabbitMQ 3.10 (Debian's) specifics are explicit here: quorum queues get `x-delivery-limit` (3.10 has no
/// default) with a dead-letter target as the crash-loop safety net, and queues that dead-letter use
/// `x-dead-letter-strategy=at-least-once` + `x-overflow=reject-publish` so that dead letters are confirmed
/// by the broker and expiring retries are never lost.
public struct BrokerLayout: Sendable {
    /// Ingress exchange backends publish jobs to.
    public static let jobsExchange = "paypipe.jobs"
    /// Internal direct exchange for stage hand-offs; routing key = stage name.
    public static let stagesExchange = "paypipe.stages"
    /// Broker-side safety net: a message redelivered this often (e.g. it crashes its worker) is
    /// dead-lettered by RabbitMQ itself. The runtime dead-letters earlier, with reasons, at
    /// ``runtimeRedeliveryLimit``.
    public static let deliveryLimit: Int64 = 25
    public static let runtimeRedeliveryLimit = 20
    public static let initialGroupSizeArgument = "x-quorum-initial-group-size"

    /// Every stage, each with its queue, dead-letter queue and (for ``topology(retrySchedule:brokerNodes:retryStages:)``'s
    /// `retryStages`) retry tiers, bound to the stages exchange under its name.
    public var stages: [StageName]
    /// Exchanges declared after the jobs and stages exchanges.
    public var exchanges: [AMQPExchange]
    /// Bindings declared after the stages' own (e.g. jobs routed from the jobs exchange to a stage's queue).
    public var bindings: [AMQPBinding]

    public init(stages: [StageName], exchanges: [AMQPExchange] = [], bindings: [AMQPBinding] = []) {
        (self.stages, self.exchanges, self.bindings) = (stages, exchanges, bindings)
    }

    /// `brokerNodes`: how many nodes `PAYPIPE_AMQP_URL` lists. With more than one, new quorum queues get
    /// `x-quorum-initial-group-size = min(3, brokerNodes)` (three replicas survive one node loss; more only cost
    /// writes). With one address (a single broker, or a load balancer in front of a cluster) the argument is left
    /// out and RabbitMQ's default applies. It is a creation-only argument (``AMQP/AMQPQueue/creationArguments``):
    /// RabbitMQ 3.10 compares it on redeclaration, so a queue that exists from before keeps its replicas and is
    /// still accepted; existing queues grow with `rabbitmq-queues grow` (docs/scaling.md).
    ///
    /// `retryStages`: the stages whose retry tiers (of `retrySchedule`) are declared (`nil`: every stage). A worker
    /// retries only its own stage, and its schedule is its own (notify's is the webhook schedule), so a worker passes
    /// its stage alone: declaring every stage's tiers with one worker's schedule made queues no worker uses. Every
    /// stage's queue and dead-letter queue are declared whatever `retryStages` says (hand-offs and dead letters go there).
    public func topology(retrySchedule: RetrySchedule, brokerNodes: Int = 1, retryStages: [StageName]? = nil) -> AMQPTopology {
        let replicas: [String: AMQPFieldValue] = brokerNodes > 1 ? [Self.initialGroupSizeArgument: .int(Int64(min(3, brokerNodes)))] : [:]
        let retried = Set(retryStages ?? stages)
        var queues: [AMQPQueue] = []
        var bindings: [AMQPBinding] = []
        for stage in stages {
            queues.append(AMQPQueue(name: stage.queueName, durable: true, arguments: Self.quorum.merging([
                "x-delivery-limit": .int(Self.deliveryLimit),
                "x-dead-letter-exchange": .string(""),
                "x-dead-letter-routing-key": .string(stage.deadLetterQueueName),
            ], uniquingKeysWith: { $1 }), creationArguments: replicas))
            queues.append(AMQPQueue(name: stage.deadLetterQueueName, durable: true, arguments: ["x-queue-type": .string("quorum")],
                                    creationArguments: replicas))
            for tier in retrySchedule.delays.indices where retried.contains(stage) {
                queues.append(AMQPQueue(
                    name: retrySchedule.queueName(for: stage, tier: tier), durable: true,
                    arguments: Self.quorum.merging([
                        "x-message-ttl": .int(Int64(retrySchedule.delays[tier] * 1000)),
                        "x-dead-letter-exchange": .string(Self.stagesExchange),
                        "x-dead-letter-routing-key": .string(stage.rawValue),
                    ], uniquingKeysWith: { $1 }), creationArguments: replicas))
            }
            bindings.append(AMQPBinding(queue: stage.queueName, exchange: Self.stagesExchange, routingKey: stage.rawValue))
        }
        return AMQPTopology(
            exchanges: [
                AMQPExchange(name: Self.jobsExchange, kind: .direct, durable: true),
                AMQPExchange(name: Self.stagesExchange, kind: .direct, durable: true),
            ] + exchanges,
            queues: queues,
            bindings: bindings + self.bindings)
    }

    /// The names of the exchanges the topology declares.
    public var exchangeNames: Set<String> {
        Set([Self.jobsExchange, Self.stagesExchange] + exchanges.map(\.name))
    }

    /// Arguments shared by every queue that dead-letters.
    private static let quorum: [String: AMQPFieldValue] = [
        "x-queue-type": .string("quorum"),
        "x-dead-letter-strategy": .string("at-least-once"),
        "x-overflow": .string("reject-publish"),
    ]
}
