import Foundation
import Testing
@testable import AMQP

@Suite("AMQPPublisher against the local broker", .serialized)
struct AMQPPublisherTests {
    @Test func confirmedPublishOfAThousandThenConsumeAndAckAll() throws {
        let queue = TestBroker.uniqueName("thousand")
        defer { TestBroker.delete(queues: [queue]) }
        let topology = AMQPTopology(queues: [.quorum(name: queue)])
        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(), topology: topology)
        defer { publisher.close() }

        let messages = (0..<1000).map { TestBroker.message(to: queue, "payment-\($0)") }
        try publisher.publish(messages, timeout: 60)
        #expect(try TestBroker.withConnection { try $0.queueDeclarePassive(queue).messages } == 1000)

        let consumer = AMQPConsumer(configuration: try TestBroker.configuration(), topology: topology,
                                    queue: queue, prefetch: 100)
        consumer.start()
        let deliveries = TestBroker.receive(1000, from: consumer, ack: true)
        consumer.close()

        #expect(deliveries.count == 1000)
        #expect(TestBroker.missing((0..<1000).map { "payment-\($0)" }, in: deliveries).isEmpty)
        #expect(deliveries.allSatisfy { $0.properties.persistent && !$0.redelivered && $0.generation == 1 })
        // close() flushed the acks before closing: nothing was requeued. (Quorum queues apply
        // settlements asynchronously through their Raft log, hence the polling.)
        var remaining: UInt32 = .max
        _ = try TestBroker.eventually(timeout: 5) {
            remaining = try TestBroker.withConnection { try $0.queueDeclarePassive(queue).messages }
            return remaining == 0
        }
        #expect(remaining == 0)
    }

    @Test func mandatoryPublishToUnroutableKeyFailsAsUnroutable() throws {
        let exchange = TestBroker.uniqueName("noroute")
        defer { TestBroker.delete(exchanges: [exchange]) }
        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(),
                                      topology: AMQPTopology(exchanges: [AMQPExchange(name: exchange, kind: .direct)]))
        defer { publisher.close() }

        let lost = AMQPOutboundMessage(exchange: exchange, routingKey: "nobody.listens", body: Array("x".utf8))
        #expect(throws: AMQPError.unroutable(replyCode: 312, text: "NO_ROUTE")) {
            try publisher.publish([lost], timeout: 10)
        }
        // Without mandatory the broker just drops (and confirms) it.
        var fireAndForget = lost
        fireAndForget.mandatory = false
        try publisher.publish([fireAndForget], timeout: 10)
    }

    @Test func unroutableMessageIsIdentifiedWithinAMixedWindow() throws {
        let exchange = TestBroker.uniqueName("mixed")
        let queue = TestBroker.uniqueName("mixedq")
        defer { TestBroker.delete(queues: [queue], exchanges: [exchange]) }
        let topology = AMQPTopology(exchanges: [AMQPExchange(name: exchange)], queues: [AMQPQueue(name: queue)],
                                    bindings: [AMQPBinding(queue: queue, exchange: exchange, routingKey: "ok")])
        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(), topology: topology)
        defer { publisher.close() }

        let window = (0..<20).map { index in
            AMQPOutboundMessage(exchange: exchange, routingKey: index == 13 ? "nope" : "ok", body: [UInt8(index)])
        }
        #expect(throws: AMQPError.unroutable(replyCode: 312, text: "NO_ROUTE")) {
            try publisher.publish(window, timeout: 10)
        }
        // The other 19 were routed and confirmed.
        #expect(try TestBroker.eventually { try TestBroker.withConnection { try $0.queueDeclarePassive(queue).messages } == 19 })
    }

    @Test func publishToMissingExchangeFailsWithChannelErrorAndPublisherRecovers() throws {
        let queue = TestBroker.uniqueName("recover")
        defer { TestBroker.delete(queues: [queue]) }
        let events = EventLog()
        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(),
                                      topology: AMQPTopology(queues: [AMQPQueue(name: queue)]), onEvent: events.handler)
        defer { publisher.close() }

        let missing = AMQPOutboundMessage(exchange: TestBroker.uniqueName("absent"), routingKey: "k", body: [1])
        do {
            try publisher.publish([missing], timeout: 10)
            Issue.record("expected a channel error")
        } catch {
            guard case .channelClosed(let code, _) = error else {
                Issue.record("expected channelClosed, got \(error)")
                return
            }
            #expect(code == 404)
        }
        try publisher.publish([TestBroker.message(to: queue, "after")], timeout: 10)
        #expect(events.connectedGenerations == [1]) // the channel was reopened, not the connection
    }

    @Test func unconfirmedMessagesAreRepublishedAfterConnectionLoss() throws {
        let queue = TestBroker.uniqueName("republish")
        defer { TestBroker.delete(queues: [queue]) }
        let topology = AMQPTopology(queues: [.quorum(name: queue)])
        let events = EventLog()
        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(), topology: topology,
                                      onEvent: events.handler)
        defer { publisher.close() }

        #expect(TestBroker.eventually { publisher.isConnected })
        publisher.dropConnection(afterPublishes: 300)
        try publisher.publish((0..<1000).map { TestBroker.message(to: queue, "job-\($0)") }, timeout: 60)

        #expect(events.connectedGenerations == [1, 2])
        #expect(events.disconnectReasons.count == 1)
        #expect(events.reconnectAttempts.first == 1)

        // At-least-once: every message arrived, some possibly twice. Count before consuming: a passive
        // declare reports only ready messages, not those already prefetched by a consumer.
        let stored = try TestBroker.withConnection { try $0.queueDeclarePassive(queue).messages }
        let consumer = AMQPConsumer(configuration: try TestBroker.configuration(), topology: topology,
                                    queue: queue, prefetch: 200)
        consumer.start()
        defer { consumer.close() }
        let deliveries = TestBroker.receive(Int(stored), from: consumer, ack: true)
        #expect(stored >= 1000)
        #expect(deliveries.count == Int(stored))
        #expect(TestBroker.missing((0..<1000).map { "job-\($0)" }, in: deliveries).isEmpty)
    }

    @Test func publishTimesOutWhileBrokerIsUnreachable() throws {
        var configuration = try TestBroker.configuration()
        configuration.port = 1 // nothing listens there
        let events = EventLog()
        let publisher = AMQPPublisher(configuration: configuration, topology: AMQPTopology(), onEvent: events.handler)
        defer { publisher.close() }
        #expect(throws: AMQPError.timeout) {
            try publisher.publish([TestBroker.message(to: "q", "x")], timeout: 0.5)
        }
        #expect(!publisher.isConnected)
        #expect(events.reconnectAttempts.first == 2)
    }

    @Test func closedPublisherRejectsPublishes() throws {
        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(), topology: AMQPTopology())
        publisher.close()
        #expect(throws: AMQPError.closed) { try publisher.publish([TestBroker.message(to: "q", "x")], timeout: 1) }
    }
}
