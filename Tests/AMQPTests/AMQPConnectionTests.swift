import Foundation
import Testing
@testable import AMQP

@Suite("AMQPConnection against the local broker", .serialized)
struct AMQPConnectionTests {
    private func channelErrorCode(_ body: () throws -> Void) -> Int? {
        do {
            try body()
            return nil
        } catch {
            if case .channelClosed(let code, _)? = error as? AMQPError { return code }
            Issue.record("expected a channel error, got \(error)")
            return nil
        }
    }

    @Test func quorumQueueArgumentsReallyReachTheBroker() throws {
        let queue = TestBroker.uniqueName("quorum")
        let deadLetters = TestBroker.uniqueName("dlx")
        defer { TestBroker.delete(queues: [queue], exchanges: [deadLetters]) }
        let topology = AMQPTopology(
            exchanges: [AMQPExchange(name: deadLetters, kind: .fanout)],
            queues: [.quorum(name: queue, deliveryLimit: 5, deadLetterExchange: deadLetters)])

        try TestBroker.withConnection { connection in
            try connection.declare(topology)
            try connection.declare(topology) // idempotent when the arguments match

            // Had the arguments been lost (dangling C strings), the queue would be classic and this
            // redeclaration would succeed.
            let classic = AMQPQueue(name: queue, arguments: ["x-queue-type": "classic"])
            #expect(channelErrorCode { _ = try connection.declareQueue(classic) } == 406)

            let otherLimit = AMQPQueue.quorum(name: queue, deliveryLimit: 6, deadLetterExchange: deadLetters)
            #expect(channelErrorCode { _ = try connection.declareQueue(otherLimit) } == 406)

            var otherDLX = AMQPQueue.quorum(name: queue, deliveryLimit: 5, deadLetterExchange: "elsewhere")
            #expect(channelErrorCode { _ = try connection.declareQueue(otherDLX) } == 406)
            otherDLX = .quorum(name: queue, deliveryLimit: 5, deadLetterExchange: deadLetters)

            // The channel is reopened transparently after each channel error.
            #expect(connection.isOpen)
            _ = try connection.declareQueue(otherDLX)
            #expect(try connection.queueDeclarePassive(queue).messages == 0)
        }
    }

    @Test func passiveDeclareOfMissingQueueIs404AndConnectionSurvives() throws {
        try TestBroker.withConnection { connection in
            #expect(channelErrorCode { _ = try connection.queueDeclarePassive(TestBroker.uniqueName("missing")) } == 404)
            let queue = TestBroker.uniqueName("after404")
            defer { _ = try? connection.deleteQueue(queue) }
            try connection.declareQueue(AMQPQueue(name: queue))
            #expect(try connection.queueDeclarePassive(queue) == (messages: 0, consumers: 0))
        }
    }

    @Test func getAckPurgeAndDeleteForTools() throws {
        let queue = TestBroker.uniqueName("tools")
        try TestBroker.withConnection { connection in
            defer { _ = try? connection.deleteQueue(queue) }
            try connection.declareQueue(AMQPQueue(name: queue))
            for index in 0..<3 {
                try connection.publish(TestBroker.message(to: queue, "m\(index)"))
            }
            #expect(try TestBroker.eventually { try connection.queueDeclarePassive(queue).messages == 3 })

            let first = try #require(try connection.get(queue: queue))
            #expect(first.body == Array("m0".utf8))
            #expect(first.routingKey == queue)
            #expect(!first.redelivered)
            try connection.ack(deliveryTag: first.deliveryTag)

            #expect(try connection.purge(queue: queue) == 2)
            #expect(try connection.get(queue: queue) == nil)
            #expect(try connection.deleteQueue(queue) == 0)
            #expect(channelErrorCode { _ = try connection.queueDeclarePassive(queue) } == 404)
        }
    }

    /// RabbitMQ checks `user_id` against the connection's user: the publisher's own name arrives as
    /// ``AMQPDelivery/userId`` (not in the properties, which re-publishing copies), another user's is refused (406).
    @Test func userIdIsTheBrokerCheckedPublisher() throws {
        let queue = TestBroker.uniqueName("userid")
        let user = try TestBroker.configuration().user
        try TestBroker.withConnection { connection in
            defer { _ = try? connection.deleteQueue(queue) }
            try connection.declareQueue(AMQPQueue(name: queue))
            var claimed = TestBroker.message(to: queue, "own")
            claimed.properties.userId = user
            try connection.publish(claimed)
            #expect(try TestBroker.eventually { try connection.queueDeclarePassive(queue).messages == 1 })
            let delivery = try #require(try connection.get(queue: queue))
            #expect(delivery.userId == user)
            #expect(delivery.properties.userId == nil)
            try connection.ack(deliveryTag: delivery.deliveryTag)

            var forged = TestBroker.message(to: queue, "forged")
            forged.properties.userId = "someone-else"
            // basic.publish has no reply: the broker's channel.close arrives with the next RPC.
            #expect(channelErrorCode {
                try connection.publish(forged)
                _ = try connection.queueDeclarePassive(queue)
            } == 406)
            #expect(try connection.queueDeclarePassive(queue).messages == 0)
        }
    }

    @Test func negotiatesTheRequestedHeartbeat() throws {
        let connection = try AMQPConnection(configuration: TestBroker.configuration(heartbeatSeconds: 2))
        defer { connection.close() }
        #expect(connection.negotiatedHeartbeat == 2)
    }

    @Test func wrongPasswordIsAConnectionFailureWithoutTheSecret() throws {
        var configuration = try TestBroker.configuration()
        configuration.password = "definitely-wrong-\(TestBroker.uniqueName("pw"))"
        do {
            _ = try AMQPConnection(configuration: configuration)
            Issue.record("login should fail")
        } catch {
            guard case .connectionFailed(let reason) = error else {
                Issue.record("expected connectionFailed, got \(error)")
                return
            }
            #expect(!reason.contains(configuration.password))
        }
    }

    /// No TLS broker is available; this only drives the rabbitmq-c OpenSSL socket path (CA loading,
    /// verification settings, handshake) into a failure that must surface as connectionFailed.
    @Test func amqpsAgainstAPlainListenerFailsCleanly() throws {
        var configuration = try TestBroker.configuration()
        configuration.tls = AMQPTLSOptions()
        configuration.connectTimeoutSeconds = 3
        let started = Date()
        do {
            _ = try AMQPConnection(configuration: configuration)
            Issue.record("a TLS handshake with a plain AMQP listener cannot succeed")
        } catch {
            guard case .connectionFailed = error else {
                Issue.record("expected connectionFailed, got \(error)")
                return
            }
        }
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test func closedConnectionReportsClosed() throws {
        let connection = try AMQPConnection(configuration: TestBroker.configuration())
        connection.close()
        #expect(!connection.isOpen)
        #expect(throws: AMQPError.closed) { _ = try connection.queueDeclarePassive("x") }
    }
}
