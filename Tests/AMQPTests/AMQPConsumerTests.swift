import Foundation
import Testing
@testable import AMQP

@Suite("AMQPConsumer against the local broker", .serialized)
struct AMQPConsumerTests {
    @Test func rejectWithoutRequeueDeadLettersThroughTheDLX() throws {
        let queue = TestBroker.uniqueName("work")
        let deadLetterExchange = TestBroker.uniqueName("dlx")
        let parking = TestBroker.uniqueName("parking")
        defer { TestBroker.delete(queues: [queue, parking], exchanges: [deadLetterExchange]) }
        let topology = AMQPTopology(
            exchanges: [AMQPExchange(name: deadLetterExchange, kind: .fanout)],
            queues: [.quorum(name: queue, deliveryLimit: 10, deadLetterExchange: deadLetterExchange),
                     AMQPQueue(name: parking)],
            bindings: [AMQPBinding(queue: parking, exchange: deadLetterExchange, routingKey: "")])
        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(), topology: topology)
        defer { publisher.close() }
        try publisher.publish([TestBroker.message(to: queue, "poison")], timeout: 10)

        let consumer = AMQPConsumer(configuration: try TestBroker.configuration(), topology: topology,
                                    queue: queue, prefetch: 10)
        consumer.start()
        defer { consumer.close() }
        let delivery = try #require(TestBroker.receive(1, from: consumer).first)
        consumer.reject(delivery, requeue: false)

        let deadLetter = try TestBroker.withConnection { connection -> AMQPDelivery? in
            var found: AMQPDelivery?
            _ = try TestBroker.eventually { found = try connection.get(queue: parking); return found != nil }
            if let found { try connection.ack(deliveryTag: found.deliveryTag) }
            return found
        }
        let parked = try #require(deadLetter)
        #expect(parked.body == Array("poison".utf8))
        #expect(parked.properties.headers["x-first-death-reason"] == "rejected")
        #expect(parked.properties.headers["x-first-death-queue"] == .string(queue))
        let deaths = try #require(parked.properties.headers["x-death"]?.arrayValue)
        let death = try #require(deaths.first?.tableValue)
        #expect(death["reason"] == "rejected")
        #expect(death["queue"] == .string(queue))
        #expect(death["count"]?.intValue == 1)
        #expect(death["routing-keys"] == .array([.string(queue)]))
        if case .timestamp? = death["time"] {} else { Issue.record("x-death time should be a timestamp") }
    }

    @Test func deliveryNotAckedBeforeCloseIsRedelivered() throws {
        let queue = TestBroker.uniqueName("redeliver")
        defer { TestBroker.delete(queues: [queue]) }
        let topology = AMQPTopology(queues: [.quorum(name: queue)])
        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(), topology: topology)
        defer { publisher.close() }
        try publisher.publish([TestBroker.message(to: queue, "once")], timeout: 10)

        let first = AMQPConsumer(configuration: try TestBroker.configuration(), topology: topology, queue: queue, prefetch: 10)
        first.start()
        let original = try #require(TestBroker.receive(1, from: first).first)
        #expect(!original.redelivered)
        first.close()

        let second = AMQPConsumer(configuration: try TestBroker.configuration(), topology: topology, queue: queue, prefetch: 10)
        second.start()
        defer { second.close() }
        let again = try #require(TestBroker.receive(1, from: second).first)
        #expect(again.redelivered)
        #expect(again.body == original.body)
        second.ack(again)
    }

    @Test func rejectWithRequeueRaisesQuorumDeliveryCount() throws {
        let queue = TestBroker.uniqueName("count")
        defer { TestBroker.delete(queues: [queue]) }
        let topology = AMQPTopology(queues: [.quorum(name: queue, deliveryLimit: 10)])
        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(), topology: topology)
        defer { publisher.close() }
        try publisher.publish([TestBroker.message(to: queue, "retry-me")], timeout: 10)

        let consumer = AMQPConsumer(configuration: try TestBroker.configuration(), topology: topology, queue: queue, prefetch: 1)
        consumer.start()
        defer { consumer.close() }
        let first = try #require(TestBroker.receive(1, from: consumer).first)
        #expect(first.deliveryCount == 0)
        consumer.reject(first, requeue: true)
        let second = try #require(TestBroker.receive(1, from: consumer).first)
        #expect(second.redelivered)
        #expect(second.deliveryCount == 1)
        consumer.ack(second)
    }

    @Test func propertiesAndHeadersRoundTrip() throws {
        let queue = TestBroker.uniqueName("headers")
        defer { TestBroker.delete(queues: [queue]) }
        let topology = AMQPTopology(queues: [AMQPQueue(name: queue)])
        let properties = AMQPProperties(
            contentType: "application/json", contentEncoding: "utf-8", messageId: "job-42", correlationId: "corr-7",
            replyTo: "replies", type: "payment.authorise", appId: "paypipe-tests", persistent: true, priority: 4,
            headers: [
                "x-payment-id": "pay_123",
                "x-attempt": 3,
                "x-amount-minor": .int(1_999_999_999_999),
                "x-live": false,
                "x-ratio": 0.5,
                "x-raw": .bytes([0, 1, 254]),
                "x-sent": .timestamp(Date(timeIntervalSince1970: 1_750_000_000)),
                "x-trace": ["span": "abc", "depth": 2, "tags": ["a", 1, true]],
            ],
            timestamp: Date(timeIntervalSince1970: 1_760_000_000),
            expiration: "600000")
        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(), topology: topology)
        defer { publisher.close() }
        let body: [UInt8] = Array(#"{"amount":1999}"#.utf8) + [0, 255]
        try publisher.publish([AMQPOutboundMessage(exchange: "", routingKey: queue, body: body, properties: properties)],
                              timeout: 10)

        let consumer = AMQPConsumer(configuration: try TestBroker.configuration(), topology: topology, queue: queue, prefetch: 1)
        consumer.start()
        defer { consumer.close() }
        let delivery = try #require(TestBroker.receive(1, from: consumer).first)
        consumer.ack(delivery)
        #expect(delivery.body == body)
        #expect(delivery.properties == properties)
        #expect(delivery.exchange == "")
        #expect(delivery.routingKey == queue)
    }

    @Test func heartbeatsKeepAnIdleConsumerAndPublisherConnected() throws {
        let queue = TestBroker.uniqueName("idle")
        defer { TestBroker.delete(queues: [queue]) }
        let topology = AMQPTopology(queues: [AMQPQueue(name: queue)])
        let consumerEvents = EventLog()
        let publisherEvents = EventLog()
        let configuration = try TestBroker.configuration(heartbeatSeconds: 2)
        let consumer = AMQPConsumer(configuration: configuration, topology: topology, queue: queue, prefetch: 10,
                                    onEvent: consumerEvents.handler)
        consumer.start()
        defer { consumer.close() }
        let publisher = AMQPPublisher(configuration: configuration, topology: topology, onEvent: publisherEvents.handler)
        defer { publisher.close() }
        #expect(TestBroker.eventually { consumer.isConnected && publisher.isConnected })

        // The application ignores both clients for more than three heartbeat intervals; the broker
        // would close connections that stay silent for two.
        Thread.sleep(forTimeInterval: 6.5)

        try publisher.publish([TestBroker.message(to: queue, "still here")], timeout: 5)
        let delivery = try #require(TestBroker.receive(1, from: consumer, timeout: 5).first)
        consumer.ack(delivery)
        #expect(delivery.generation == 1)
        #expect(consumerEvents.disconnectReasons.isEmpty)
        #expect(publisherEvents.disconnectReasons.isEmpty)
        #expect(consumerEvents.connectedGenerations == [1])
        #expect(publisherEvents.connectedGenerations == [1])
    }

    @Test func afterReconnectAcksOfTheOldGenerationAreIgnored() throws {
        let queue = TestBroker.uniqueName("generation")
        defer { TestBroker.delete(queues: [queue]) }
        let topology = AMQPTopology(queues: [.quorum(name: queue)])
        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(), topology: topology)
        defer { publisher.close() }
        try publisher.publish([TestBroker.message(to: queue, "gen")], timeout: 10)

        let events = EventLog()
        let consumer = AMQPConsumer(configuration: try TestBroker.configuration(), topology: topology, queue: queue,
                                    prefetch: 10, onEvent: events.handler)
        consumer.start()
        let stale = try #require(TestBroker.receive(1, from: consumer).first)
        #expect(stale.generation == 1)

        consumer.dropConnection()
        let fresh = try #require(TestBroker.receive(1, from: consumer).first)
        #expect(fresh.generation == 2)
        #expect(fresh.redelivered)
        #expect(fresh.deliveryTag == stale.deliveryTag) // same tag, different channel: acking `stale` must not ack `fresh`
        #expect(events.connectedGenerations == [1, 2])

        consumer.ack(stale)
        consumer.close()
        // `fresh` was never acked, so the message is back in the queue.
        #expect(try TestBroker.eventually { try TestBroker.withConnection { try $0.queueDeclarePassive(queue).messages } == 1 })
    }

    @Test func brokerCancelAfterQueueDeletionRedeclaresAndResumes() throws {
        let queue = TestBroker.uniqueName("deleted")
        defer { TestBroker.delete(queues: [queue]) }
        let topology = AMQPTopology(queues: [AMQPQueue(name: queue)])
        let events = EventLog()
        let consumer = AMQPConsumer(configuration: try TestBroker.configuration(), topology: topology, queue: queue,
                                    prefetch: 10, onEvent: events.handler)
        consumer.start()
        defer { consumer.close() }
        #expect(TestBroker.eventually { consumer.isConnected })

        try TestBroker.withConnection { _ = try $0.deleteQueue(queue) }
        #expect(TestBroker.eventually { events.connectedGenerations == [1, 2] })

        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(), topology: topology)
        defer { publisher.close() }
        try publisher.publish([TestBroker.message(to: queue, "back")], timeout: 10)
        let delivery = try #require(TestBroker.receive(1, from: consumer).first)
        #expect(delivery.generation == 2)
        consumer.ack(delivery)
    }

    @Test func stopConsumingStopsNewDeliveriesButAcksStillWork() throws {
        let queue = TestBroker.uniqueName("stop")
        defer { TestBroker.delete(queues: [queue]) }
        let topology = AMQPTopology(queues: [AMQPQueue(name: queue)])
        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(), topology: topology)
        defer { publisher.close() }
        try publisher.publish([TestBroker.message(to: queue, "before")], timeout: 10)

        let consumer = AMQPConsumer(configuration: try TestBroker.configuration(), topology: topology, queue: queue, prefetch: 10)
        consumer.start()
        let before = try #require(TestBroker.receive(1, from: consumer).first)
        consumer.stopConsuming()
        try publisher.publish([TestBroker.message(to: queue, "after")], timeout: 10)
        #expect(consumer.receive(maxCount: 10, timeout: 1).isEmpty)
        consumer.ack(before)
        consumer.close()
        // "before" was acked after the cancel, "after" was never delivered.
        #expect(try TestBroker.withConnection { try $0.queueDeclarePassive(queue).messages } == 1)
    }
}
