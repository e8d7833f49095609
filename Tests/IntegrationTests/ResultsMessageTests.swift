import AMQP
import Foundation
import PaymentStages
import Pipeline
import Testing

extension Integration {
    /// A payment's message on `paypipe.results` as a backend receives it from the real broker (docs/job-contract.md
    /// "Receiving results"): `correlation_id` = the job id, the id headers, and the per-merchant binding
    /// `payment.*.<merchantId>`, exact even when one merchant id is a dotted suffix of another.
    @Suite struct ResultsMessageTests {
        @Test func aResultCarriesItsJobAsCorrelationIdAndReachesItsMerchantsBindingOnly() throws {
            let harness = try NotifyHarness()
            defer { harness.tearDown() }
            let receiver = try WebhookTestReceiver(secret: NotifyHarness.secret)
            defer { receiver.stop() }
            // "eu" is a topic-word suffix of "shop.eu": `#.eu` would match both, `payment.*.eu` only the first.
            let dotted = "shop.eu", suffix = "eu"
            for merchant in [dotted, suffix] { try harness.applyMerchant(merchant, webhookURL: receiver.url) }
            let tag = UUID().uuidString.prefix(8).lowercased()
            let bindings = ["payment.*.\(dotted)", "payment.*.\(suffix)", "*.*.\(suffix)", "#.\(suffix)"]
            let queues = bindings.map { "results-kit-\(tag)-\($0)" }
            let connection = try harness.amqp()
            defer {
                for queue in queues { _ = try? connection.deleteQueue(queue) }
                connection.close()
            }
            try connection.declare(AMQPTopology(
                queues: queues.map { AMQPQueue(name: $0, durable: false) },
                bindings: zip(queues, bindings).map { AMQPBinding(queue: $0, exchange: PipelineTopology.resultsExchange, routingKey: $1) }))
            let runtime = try harness.startedRuntime()
            defer { runtime.stopAndWait() }

            let payment = try harness.insertPayment(merchantId: dotted, status: .authorized)
            let other = try harness.insertPayment(merchantId: suffix, status: .declined)
            try harness.publish([payment, other])
            var received: [String: [AMQPDelivery]] = [:]
            try TestServices.eventually(timeout: 60, "both results on every binding that matches them") {
                for queue in queues { received[queue, default: []] += try connection.drain(queue) }
                return received[queues[0]]?.count == 1 && received[queues[1]]?.count == 1 && received[queues[3]]?.count == 2
            }
            // Whatever is still on its way to the other queues would have arrived with these.
            for queue in queues { received[queue, default: []] += try connection.drain(queue) }

            let result = try #require(received[queues[0]]?.first)
            #expect(result.routingKey == "payment.authorized", "delivered with the event type as routing key")
            #expect(result.properties.correlationId == payment.jobId)
            #expect(result.properties.messageId == PaymentEvent.id(paymentId: payment.paymentId, type: .authorized))
            #expect(result.properties.headers["merchantId"] == .string(dotted))
            #expect(result.properties.headers["jobId"] == .string(payment.jobId))
            #expect(result.properties.headers["paymentId"] == .string(payment.paymentId.paymentIDText))
            #expect(result.properties.headers["type"] == .string("payment.authorized"))

            let otherResult = try #require(received[queues[1]]?.first)
            #expect(otherResult.properties.correlationId == other.jobId && otherResult.properties.headers["merchantId"] == .string(suffix))
            #expect(received[queues[2]]?.map(\.properties.correlationId) == [other.jobId], "*.*.eu: the suffix merchant's only")
            #expect(Set(received[queues[3]]?.compactMap(\.properties.correlationId) ?? []) == [payment.jobId, other.jobId],
                    "#.eu also matches shop.eu's key: the pattern docs/job-contract.md warns against")
            #expect(received[queues[0]]?.count == 1 && received[queues[1]]?.count == 1 && received[queues[2]]?.count == 1)
        }
    }
}
