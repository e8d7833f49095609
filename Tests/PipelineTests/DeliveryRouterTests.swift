import AMQP
import Foundation
import Testing
@testable import Pipeline

@Suite struct DeliveryRouterTests {
    let router = DeliveryRouter(stage: .submit, retrySchedule: RetrySchedule(delays: [1, 30], maxRetries: 2))

    func delivery(retries: Int? = nil) -> AMQPDelivery {
        var properties = AMQPProperties()
        properties.messageId = "m-1"
        if let retries { properties.headers[DeliveryRouter.Header.retries] = .int(Int64(retries)) }
        return AMQPDelivery(body: Array("{}".utf8), properties: properties, exchange: "paypipe.stages", routingKey: "submit",
                            redelivered: false, deliveryTag: 7, generation: 1)
    }

    @Test func retriesGoToTheNextTierWithJitterWithinTheTier() throws {
        for (previous, queue, delay) in [(0, "paypipe.submit.retry.1s", 1000.0), (1, "paypipe.submit.retry.30s", 30000.0)] {
            for _ in 0..<50 {
                let (message, exhausted) = router.retry(delivery(retries: previous), after: .transient(code: "gateway_5xx", reason: "503"))
                #expect(!exhausted)
                #expect(message.exchange == "" && message.routingKey == queue)
                #expect(message.properties.headers[DeliveryRouter.Header.retries] == .int(Int64(previous + 1)))
                #expect(message.properties.headers[DeliveryRouter.Header.errorCode] == .string("gateway_5xx"))
                let expiration = try #require(message.properties.expiration.flatMap(Double.init))
                #expect(expiration >= delay * 0.8 && expiration <= delay, "jitter stays within 80-100 % of the tier")
            }
        }
    }

    @Test func exhaustedRetriesBecomeADeadLetterWithTheLastError() {
        let (message, exhausted) = router.retry(delivery(retries: 2), after: .transient(code: "gateway_5xx", reason: "503"))
        #expect(exhausted)
        #expect(message.routingKey == "paypipe.submit.dlq")
        #expect(message.properties.headers[DeliveryRouter.Header.errorCode] == .string("retries_exhausted"))
        #expect(message.properties.headers[DeliveryRouter.Header.error]?.stringValue?.contains("gateway_5xx") == true)
        #expect(message.properties.expiration == nil)
    }

    @Test func deadLettersKeepBodyAndPropertiesAndSayWhy() {
        let message = router.deadLetter(delivery(), code: "malformed_message", reason: String(repeating: "x", count: 2000))
        #expect(message.body == Array("{}".utf8))
        #expect(message.properties.messageId == "m-1")
        #expect(message.properties.persistent)
        #expect(message.properties.headers[DeliveryRouter.Header.stage] == .string("submit"))
        #expect(message.properties.headers[DeliveryRouter.Header.originalRoutingKey] == .string("submit"))
        #expect((message.properties.headers[DeliveryRouter.Header.error]?.stringValue?.count ?? 0) <= 501, "reasons are bounded")
    }

    @Test func handOffsAddressTheTargetStage() throws {
        let payment = StageMessage(paymentId: UUID(), merchantId: "m", jobId: "j")
        let message = router.handOff(payment, to: .notify)
        #expect(message.exchange == PipelineTopology.stagesExchange && message.routingKey == "notify" && message.mandatory)
        #expect(try StageMessage.decode(message.body) == payment)
    }
}
