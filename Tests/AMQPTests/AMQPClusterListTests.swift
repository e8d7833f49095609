import Testing
@testable import AMQP

/// `PAYPIPE_AMQP_URL` as a comma-separated list of node URLs (RabbitMQ clients' address list).
@Suite("AMQPConfiguration node lists")
struct AMQPClusterListTests {
    @Test func parsesACommaSeparatedListOfNodes() throws {
        let configuration = try AMQPConfiguration(
            url: "amqp://pay:s3cret@rabbit-1:5672/prod?heartbeat=5,amqp://pay:s3cret@rabbit-2:5673/prod?heartbeat=5,AMQP://pay:s3cret@[::1]/prod?heartbeat=5")
        #expect(configuration.nodes == [
            AMQPEndpoint(host: "rabbit-1", port: 5672), AMQPEndpoint(host: "rabbit-2", port: 5673), AMQPEndpoint(host: "::1", port: 5672),
        ])
        #expect(configuration.host == "rabbit-1")
        #expect(configuration.heartbeatSeconds == 5)
        #expect(configuration.vhost == "prod")
        #expect(configuration.redactedURL == "amqp://pay:***@rabbit-1:5672/prod,amqp://pay:***@rabbit-2:5673/prod,amqp://pay:***@[::1]:5672/prod")
        #expect(!configuration.description.contains("s3cret"))
    }

    /// A single URL means what it always meant, a comma in the password included.
    @Test func aCommaInsideAPasswordDoesNotSplitTheList() throws {
        let configuration = try AMQPConfiguration(url: "amqp://pay:a,b,amqp@rabbit-1/%2f")
        #expect(configuration.password == "a,b,amqp")
        #expect(configuration.nodes == [AMQPEndpoint(host: "rabbit-1", port: 5672)])
    }

    @Test(arguments: [
        "amqp://pay:s3cret@rabbit-1/%2f,amqp://other:s3cret@rabbit-2/%2f",
        "amqp://pay:s3cret@rabbit-1/%2f,amqp://pay:s3cret@rabbit-2/other",
        "amqp://pay:s3cret@rabbit-1/%2f,amqps://pay:s3cret@rabbit-2/%2f",
        "amqp://pay:s3cret@rabbit-1/%2f?heartbeat=5,amqp://pay:s3cret@rabbit-2/%2f",
        "amqp://pay:s3cret@rabbit-1/%2f,amqp://pay:different@rabbit-2/%2f",
    ])
    func theNodesOfAListShareEverythingButHostAndPort(url: String) {
        let error = #expect(throws: AMQPError.self) { try AMQPConfiguration(url: url) }
        #expect("\(error.map { "\($0)" } ?? "")".contains("differ only in host and port"))
        #expect(!"\(error.map { "\($0)" } ?? "")".contains("s3cret"))
    }

    @Test func aNodeListedTwiceIsRefused() {
        #expect(throws: AMQPError.self) { try AMQPConfiguration(url: "amqp://u:p@r1:5672/%2f,amqp://u:p@r1/%2f") }
    }

    /// A connection skips a node that refuses and takes one that accepts, in any order of the list.
    @Test func aConnectionTakesAReachableNodeOfTheList() throws {
        var configuration = try TestBroker.configuration()
        let live = configuration.nodes[0]
        let dead = AMQPEndpoint(host: "127.0.0.1", port: 1)
        configuration.nodes = [dead, live]
        for _ in 0..<6 {  // the order is shuffled per attempt: both orders come up
            let connection = try AMQPConnection(configuration: configuration)
            #expect(connection.node == live)
            connection.close()
        }
        configuration.nodes = [dead, AMQPEndpoint(host: "127.0.0.1", port: 2)]
        let error = #expect(throws: AMQPError.self) { try AMQPConnection(configuration: configuration) }
        #expect("\(error.map { "\($0)" } ?? "")".contains("127.0.0.1:2"))
    }

    /// Failover of a publisher: the connection drops mid-window, the reconnect goes through the list (a dead node
    /// first or not), and every unconfirmed message is sent again, so nothing is lost (at-least-once).
    @Test func aPublisherFailsOverAndResendsWhatWasNotConfirmed() throws {
        let queue = TestBroker.uniqueName("failover")
        defer { TestBroker.delete(queues: [queue]) }
        let topology = AMQPTopology(queues: [.quorum(name: queue)])
        var configuration = try TestBroker.configuration()
        configuration.nodes = [AMQPEndpoint(host: "127.0.0.1", port: 1), configuration.nodes[0]]
        let events = EventLog()
        let publisher = AMQPPublisher(configuration: configuration, topology: topology, onEvent: events.handler)
        defer { publisher.close() }
        #expect(TestBroker.eventually { publisher.isConnected })
        publisher.dropConnection(afterPublishes: 150)
        try publisher.publish((0..<500).map { TestBroker.message(to: queue, "job-\($0)") }, timeout: 60)
        #expect(events.connectedGenerations == [1, 2])
        // Counted before any consumer starts: the count is of ready messages, and a consumer's prefetch takes up to 200
        // of them out of it as soon as it is up.
        let stored = try TestBroker.withConnection { try $0.queueDeclarePassive(queue).messages }
        let consumer = AMQPConsumer(configuration: configuration, topology: topology, queue: queue, prefetch: 200)
        consumer.start()
        defer { consumer.close() }
        let deliveries = TestBroker.receive(Int(stored), from: consumer, ack: true)
        #expect(stored >= 500)
        #expect(TestBroker.missing((0..<500).map { "job-\($0)" }, in: deliveries).isEmpty)
    }

    /// `reconnect()` replaces the connection: a new generation, and publishing goes on over it.
    @Test func aPublisherReconnectsOnRequest() throws {
        let queue = TestBroker.uniqueName("reconnect")
        defer { TestBroker.delete(queues: [queue]) }
        let events = EventLog()
        let publisher = AMQPPublisher(configuration: try TestBroker.configuration(), topology: AMQPTopology(queues: [.quorum(name: queue)]),
                                      onEvent: events.handler)
        defer { publisher.close() }
        try publisher.publish(TestBroker.message(to: queue, "before"), timeout: 10)
        publisher.reconnect()
        #expect(TestBroker.eventually { events.connectedGenerations == [1, 2] })
        try publisher.publish(TestBroker.message(to: queue, "after"), timeout: 10)
        #expect(try TestBroker.withConnection { try $0.queueDeclarePassive(queue).messages } == 2)
    }

    /// RabbitMQ 3.10 holds `x-quorum-initial-group-size` against a redeclaration in every direction (406
    /// PRECONDITION_FAILED: "inequivalent arg … received the value '3' … but current is none"), so a plain redeclaration
    /// of a queue created before the cluster grew is refused: this pins that broker behaviour.
    @Test func rabbitMQRefusesAPlainRedeclarationWithAnotherInitialGroupSize() throws {
        let queue = TestBroker.uniqueName("group-size-broker")
        defer { TestBroker.delete(queues: [queue]) }
        try TestBroker.withConnection { connection in
            try connection.declareQueue(.quorum(name: queue))
            let error = #expect(throws: AMQPError.self) {
                // The bare queue.declare, without declareQueue's handling of creation-only arguments.
                try connection.queueDeclare(name: queue, passive: false, durable: true,
                                            arguments: ["x-queue-type": "quorum", "x-quorum-initial-group-size": .int(3)])
            }
            guard case .channelClosed(406, let text) = error else {
                Issue.record("expected 406, got \(String(describing: error))")
                return
            }
            #expect(text.contains("x-quorum-initial-group-size"))
            try connection.declareQueue(.quorum(name: queue))  // the channel was reopened; the queue is intact
        }
    }

    /// As a creation argument it is accepted on every existing queue: one declared without it (a single broker that
    /// became a cluster), one with another size (the cluster grew), and one with it declared without it (the list went
    /// back to one address); a new queue gets it.
    @Test func aCreationArgumentIsAcceptedOnExistingQueuesWhateverTheyWereCreatedWith() throws {
        let queues = (0..<4).map { TestBroker.uniqueName("group-size-\($0)") }
        defer { TestBroker.delete(queues: queues) }
        func queue(_ name: String, size: Int64?) -> AMQPQueue {
            var queue = AMQPQueue.quorum(name: name, deliveryLimit: 5)
            if let size { queue.creationArguments = ["x-quorum-initial-group-size": .int(size)] }
            return queue
        }
        try TestBroker.withConnection { connection in
            try connection.declareQueue(queue(queues[0], size: nil))
            try connection.declareQueue(queue(queues[0], size: 3))
            try connection.declareQueue(queue(queues[1], size: 3))
            try connection.declareQueue(queue(queues[1], size: 2))
            try connection.declareQueue(queue(queues[2], size: 3))
            try connection.declareQueue(queue(queues[2], size: nil))
            try connection.declareQueue(queue(queues[3], size: 1))
            try connection.declareQueue(queue(queues[3], size: 1))
            // Other arguments are still held against the queue: a changed delivery limit is refused.
            var changed = queue(queues[0], size: 3)
            changed.arguments["x-delivery-limit"] = .int(6)
            #expect(throws: AMQPError.self) { try connection.declareQueue(changed) }
        }
    }
}
