import AMQP
import Testing
import WorkerRuntime

/// The runtime's broker objects for any stages: its two exchanges first, then the deployment's; each stage's queue
/// (dead-lettering to its DLQ), DLQ and retry tiers (dead-lettering back through the stages exchange), bound under its
/// name; then the deployment's bindings.
@Suite struct BrokerLayoutTests {
    let layout = BrokerLayout(
        stages: [StageName("a"), StageName("b")],
        exchanges: [AMQPExchange(name: "x.events", kind: .topic, durable: true)],
        bindings: [AMQPBinding(queue: "paypipe.a", exchange: BrokerLayout.jobsExchange, routingKey: "job.a")])

    @Test func theRuntimesObjectsComeFirstThenTheDeployments() {
        let topology = layout.topology(retrySchedule: RetrySchedule(delays: [1, 30], maxRetries: 2))
        #expect(topology.exchanges.map(\.name) == ["paypipe.jobs", "paypipe.stages", "x.events"])
        #expect(layout.exchangeNames == ["paypipe.jobs", "paypipe.stages", "x.events"])
        #expect(topology.queues.map(\.name) == [
            "paypipe.a", "paypipe.a.dlq", "paypipe.a.retry.1s", "paypipe.a.retry.30s",
            "paypipe.b", "paypipe.b.dlq", "paypipe.b.retry.1s", "paypipe.b.retry.30s",
        ])
        #expect(topology.bindings == [
            AMQPBinding(queue: "paypipe.a", exchange: "paypipe.stages", routingKey: "a"),
            AMQPBinding(queue: "paypipe.b", exchange: "paypipe.stages", routingKey: "b"),
            AMQPBinding(queue: "paypipe.a", exchange: "paypipe.jobs", routingKey: "job.a"),
        ])
    }

    @Test func queuesDeadLetterWhereTheRuntimeSendsThem() throws {
        let queues = layout.topology(retrySchedule: RetrySchedule(delays: [5], maxRetries: 1), retryStages: [StageName("b")]).queues
        #expect(!queues.contains { $0.name.hasPrefix("paypipe.a.retry.") }, "tiers only for the retry stages")
        let work = try #require(queues.first { $0.name == "paypipe.b" })
        #expect(work.arguments["x-dead-letter-routing-key"] == .string("paypipe.b.dlq"))
        #expect(work.arguments["x-delivery-limit"] == .int(BrokerLayout.deliveryLimit))
        let tier = try #require(queues.first { $0.name == "paypipe.b.retry.5s" })
        #expect(tier.arguments["x-message-ttl"] == .int(5000))
        #expect(tier.arguments["x-dead-letter-exchange"] == .string(BrokerLayout.stagesExchange))
        #expect(tier.arguments["x-dead-letter-routing-key"] == .string("b"))
    }
}
