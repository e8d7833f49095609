import AMQP
import Foundation
import Pipeline
import Testing

/// The payment pipeline's broker objects and hand-offs, as the payment side hands them to the runtime.
@Suite struct PipelineTopologyTests {
    /// The pipeline's exchanges, queues and bindings, in declaration order: what every worker declares (the names are
    /// an interface: docs/operations, the broker permissions, `paypipe dlq`).
    @Test func theTopologyIsThePipelinesQueuesAndRoutes() {
        let topology = PipelineTopology.topology(retrySchedule: .standard)
        #expect(topology.exchanges == [
            AMQPExchange(name: "paypipe.jobs", kind: .direct, durable: true),
            AMQPExchange(name: "paypipe.stages", kind: .direct, durable: true),
            AMQPExchange(name: "paypipe.results", kind: .topic, durable: true),
        ])
        let stages = ["decrypt", "authorize", "submit", "notify", "operations"]
        #expect(topology.queues.map(\.name) == stages.flatMap { stage in
            ["paypipe.\(stage)", "paypipe.\(stage).dlq"] + ["1s", "5s", "30s", "120s", "600s"].map { "paypipe.\(stage).retry.\($0)" }
        })
        #expect(topology.bindings.map { "\($0.exchange) \($0.routingKey) → \($0.queue)" } == stages.map { "paypipe.stages \($0) → paypipe.\($0)" } + [
            "paypipe.jobs payment.requested → paypipe.decrypt",
            "paypipe.jobs payment.capture.requested → paypipe.operations",
            "paypipe.jobs payment.void.requested → paypipe.operations",
            "paypipe.jobs payment.refund.requested → paypipe.operations",
            "paypipe.jobs payment.complete.requested → paypipe.operations",
        ])
    }

    @Test func replayGoesOnlyToDeclaredExchanges() {
        let declared = Set(PipelineTopology.topology(retrySchedule: .standard).exchanges.map(\.name))
        #expect(declared == PipelineTopology.exchangeNames)
        for exchange in declared { #expect(PipelineTopology.isReplayTarget(exchange: exchange)) }
        for exchange in ["", "amq.direct", "amq.topic", "paypipe.jobs.evil"] { #expect(!PipelineTopology.isReplayTarget(exchange: exchange)) }
    }

    /// Replicas for new quorum queues follow the node list (at most three); one address leaves RabbitMQ's default. The
    /// size is a creation argument, so redeclaring a queue created with another size (or none) is accepted.
    @Test(arguments: [(1, nil), (2, 2), (3, 3), (5, 3)] as [(Int, Int64?)])
    func quorumQueuesGetAnInitialGroupSizeFromTheNodeCount(nodes: Int, size: Int64?) {
        let queues = PipelineTopology.topology(retrySchedule: .standard, brokerNodes: nodes).queues
        #expect(!queues.isEmpty)
        for queue in queues {
            #expect(queue.arguments["x-queue-type"] == .string("quorum"))
            #expect(queue.arguments[PipelineTopology.initialGroupSizeArgument] == nil)
            #expect(queue.creationArguments[PipelineTopology.initialGroupSizeArgument] == size.map { .int($0) })
        }
    }

    /// A worker declares the retry tiers of its own stage only (its schedule is its own); every stage's queue and
    /// dead-letter queue are declared by every worker.
    @Test func retryTiersAreDeclaredOnlyForTheWorkersStage() {
        let schedule = RetrySchedule(delays: [5, 300], maxRetries: 3)
        let names = Set(PipelineTopology.topology(retrySchedule: schedule, retryStages: [.notify]).queues.map(\.name))
        #expect(names.contains("paypipe.notify.retry.5s"))
        #expect(names.contains("paypipe.notify.retry.300s"))
        #expect(!names.contains { $0.hasPrefix("paypipe.submit.retry.") || $0.hasPrefix("paypipe.decrypt.retry.") })
        for stage in Stage.allCases {
            #expect(names.contains(stage.queueName))
            #expect(names.contains(stage.deadLetterQueueName))
        }
    }

    @Test func handOffsAddressTheTargetStage() throws {
        let payment = StageMessage(paymentId: UUID(), merchantId: "m", jobId: "j")
        let message = DeliveryRouter(stage: .submit, retrySchedule: .standard).handOff(payment, to: .notify)
        #expect(message.exchange == PipelineTopology.stagesExchange && message.routingKey == "notify" && message.mandatory)
        #expect(try StageMessage.decode(message.body) == payment)
        #expect(message.properties.messageId == "\(payment.paymentId.paymentIDText):notify" && message.properties.appId == "paypipe-submit")
        #expect(StageOutcome.handOff(to: .notify, payment) == .handOff(HandOffMessage(.notify, payment)))
    }
}
