import AMQP
import Foundation
import Testing
@testable import WorkerRuntime

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

    /// `x-paypipe-retries: -1` indexed `delays[-1]` and trapped the worker at its first transient failure.
    @Test(arguments: [Int64.min, -1, Int64(Int32.max), Int64.max])
    func retryCountsAreClampedToTheSchedule(retries: Int64) {
        var hostile = delivery()
        hostile.properties.headers[DeliveryRouter.Header.retries] = .int(retries)
        let previous = router.previousRetries(of: hostile)
        #expect((0...router.retrySchedule.maxRetries).contains(previous))
        let (message, exhausted) = router.retry(hostile, after: .transient(code: "gateway_5xx", reason: "503"))
        #expect(exhausted == (retries > 0))
        #expect(message.routingKey == (retries > 0 ? "paypipe.submit.dlq" : "paypipe.submit.retry.1s"))
    }

    @Test func theScheduleItselfClampsNegativeCounts() {
        #expect(RetrySchedule(delays: [1, 5], maxRetries: 3).decision(previousRetries: -7) == .retry(tier: 0, delay: 1))
    }

    /// Only the runtime's own routes (hand-offs and retry tiers, through `paypipe.stages`) may carry the runtime's
    /// headers; a job from `paypipe.jobs` or a message sent straight to a queue has its `x-paypipe-*` dropped, and a
    /// first delivery's `x-delivery-count` too, so neither reaches a retry copy or a dead letter.
    @Test func publisherSetRuntimeHeadersAreDropped() {
        var properties = AMQPProperties()
        properties.messageId = "job-1"
        properties.headers = [
            DeliveryRouter.Header.retries: .int(2), DeliveryRouter.Header.errorCode: .string("forged"),
            "x-paypipe-anything": .string("x"), "x-delivery-count": .int(19), "x-custom": .string("kept"),
        ]
        for exchange in [BrokerLayout.jobsExchange, ""] {
            let job = AMQPDelivery(body: Array("{}".utf8), properties: properties, exchange: exchange, routingKey: "payment.requested",
                                   redelivered: false, deliveryTag: 3, generation: 1)
            let admitted = router.admitted(job)
            #expect(admitted.properties.headers.keys.sorted() == ["x-custom"])
            #expect(admitted.deliveryTag == 3 && admitted.generation == 1)
            #expect(router.previousRetries(of: admitted) == 0)
            let (retry, exhausted) = router.retry(admitted, after: .transient(code: "t", reason: "r"))
            #expect(!exhausted)
            #expect(retry.properties.headers[DeliveryRouter.Header.retries] == .int(1))
            #expect(retry.properties.headers["x-delivery-count"] == nil)
        }
        // The runtime's own retry copy, dead-lettered back through paypipe.stages by its tier queue, keeps its count;
        // the broker's count of a redelivery is not copied into the next retry either.
        let tier = AMQPDelivery(body: Array("{}".utf8), properties: properties, exchange: BrokerLayout.stagesExchange,
                                routingKey: "submit", redelivered: true, deliveryTag: 4, generation: 1)
        let admitted = router.admitted(tier)
        #expect(router.previousRetries(of: admitted) == 2)
        #expect(admitted.deliveryCount == 19)
        #expect(router.retry(admitted, after: .transient(code: "t", reason: "r")).message.properties.headers["x-delivery-count"] == nil)
    }

    /// The one exhaustion rule: the runtime's retry of a transient failure and a stage recording its own exhaustion
    /// (notify) produce the same dead letter.
    @Test func aStageRecordingExhaustionGetsTheRuntimesDeadLetter() {
        let failure = StageFailure.transient(code: "webhook_failed", reason: "http_500")
        let (viaRetry, exhausted) = router.retry(delivery(retries: 2), after: failure)
        #expect(exhausted)
        var recorded = router.exhausted(delivery(retries: 2), after: failure)
        var retried = viaRetry
        recorded.properties.headers[DeliveryRouter.Header.deadLetteredAt] = nil
        retried.properties.headers[DeliveryRouter.Header.deadLetteredAt] = nil
        #expect(recorded == retried)
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

    @Test func handOffsAddressTheTargetStage() {
        let handOff = HandOffMessage(to: .notify, id: "p-1:notify", body: Array("{}".utf8))
        let at = Date(timeIntervalSince1970: 1_767_225_600)
        let message = router.handOff(handOff, now: at)
        #expect(message.exchange == BrokerLayout.stagesExchange && message.routingKey == "notify" && message.mandatory)
        #expect(message.body == handOff.body && message.properties.messageId == "p-1:notify" && message.properties.persistent)
        #expect(message.properties.appId == "paypipe-submit" && message.properties.contentType == "application/json")
        #expect(message.properties.type == "notify" && message.properties.timestamp == at, "the target stage and the publish time")
        // Among a stage's publications (`StageOutcome.publish`), a hand-off is rendered exactly as a hand-off outcome is.
        #expect(router.message(for: .handOff(handOff), now: at) == message)
    }

    /// A handler sees a neutral ``InboundMessage`` and asks for neutral ``OutboundMessage``s; the router renders them:
    /// an event with the worker's JSON properties, a dead letter as a copy of the very delivery with its origin.
    @Test func handlerMessagesAreRenderedForTheBroker() throws {
        var properties = AMQPProperties()
        properties.timestamp = Date(timeIntervalSince1970: 1_767_225_600)
        properties.headers[DeliveryRouter.Header.retries] = .int(9)
        let delivery = AMQPDelivery(body: Array("{}".utf8), properties: properties, exchange: "paypipe.stages", routingKey: "submit",
                                    redelivered: true, deliveryTag: 7, generation: 1)
        let inbound = InboundMessage(delivery, previousRetries: router.previousRetries(of: delivery))
        #expect(inbound.body == delivery.body && inbound.redelivered && inbound.publishedAt == properties.timestamp)
        #expect(inbound.previousRetries == 2, "clamped to maxRetries")

        let at = Date(timeIntervalSince1970: 1_767_225_601)
        let event = router.message(for: .event(exchange: "paypipe.results", type: "payment.authorized", id: "evt_1", body: [1], timestamp: at))
        #expect(event.exchange == "paypipe.results" && event.routingKey == "payment.authorized" && event.body == [1] && !event.mandatory)
        #expect(event.properties.messageId == "evt_1" && event.properties.type == "payment.authorized" && event.properties.timestamp == at)
        #expect(event.properties.persistent && event.properties.appId == "paypipe-submit" && event.properties.contentType == "application/json")

        let dead = router.message(for: .deadLetter(inbound, code: "retries_exhausted", reason: "gave up"), now: at)
        #expect(dead == router.deadLetter(delivery, code: "retries_exhausted", reason: "gave up", now: at))
        #expect(dead.routingKey == "paypipe.submit.dlq" && dead.properties.headers[DeliveryRouter.Header.originalRoutingKey] == .string("submit"))
    }
}

/// The publisher of a job (its broker-checked AMQP `user_id`) survives the runtime's copies, which a worker publishes
/// and so may not carry the publisher's `user_id` (RabbitMQ would refuse them).
@Suite struct DeliveryRouterPublisherTests {
    let router = DeliveryRouter(stage: .decrypt, retrySchedule: RetrySchedule(delays: [1], maxRetries: 1))

    func job(userId: String?, headers: [String: AMQPFieldValue] = [:], exchange: String = "paypipe.jobs") -> AMQPDelivery {
        AMQPDelivery(body: Array("{}".utf8), properties: AMQPProperties(headers: headers), exchange: exchange,
                     routingKey: "payment.requested", redelivered: false, deliveryTag: 1, generation: 1, userId: userId)
    }

    @Test func retryAndDeadLetterCopiesKeepThePublisherInAHeaderNotInUserId() {
        let first = job(userId: "backend-a")
        #expect(DeliveryRouter.publisher(of: first) == "backend-a")
        let (retry, exhausted) = router.retry(first, after: .transient(code: "database_conflict", reason: "x"))
        #expect(!exhausted)
        #expect(retry.properties.userId == nil)
        #expect(retry.properties.headers[DeliveryRouter.Header.publisher] == .string("backend-a"))
        // The copy comes back through the stages exchange (the tier queue dead-letters it there): same publisher.
        let back = job(userId: nil, headers: retry.properties.headers, exchange: "paypipe.stages")
        #expect(DeliveryRouter.publisher(of: router.admitted(back)) == "backend-a")
        let dead = router.deadLetter(first, code: "publisher_not_allowed", reason: "r")
        #expect(dead.properties.userId == nil)
        #expect(dead.properties.headers[DeliveryRouter.Header.publisher] == .string("backend-a"))
    }

    @Test func aPublisherCannotClaimAnotherPublisherByHeader() {
        // On a job from paypipe.jobs the header is the publisher's own: dropped on admission, the user_id counts.
        let forged = router.admitted(job(userId: "backend-a", headers: [DeliveryRouter.Header.publisher: .string("backend-b")]))
        #expect(DeliveryRouter.publisher(of: forged) == "backend-a")
        let none = router.admitted(job(userId: nil, headers: [DeliveryRouter.Header.publisher: .string("backend-b")]))
        #expect(DeliveryRouter.publisher(of: none) == nil)
        // Straight into the queue (the default exchange): the same.
        let direct = router.admitted(job(userId: nil, headers: [DeliveryRouter.Header.publisher: .string("backend-b")], exchange: ""))
        #expect(DeliveryRouter.publisher(of: direct) == nil)
    }

    @Test func anEventIsAlsoRoutedByItsCarbonCopyKeys() {
        let at = Date(timeIntervalSince1970: 1_700_000_000)
        let plain = router.message(for: .event(exchange: "paypipe.results", type: "payment.authorized", id: "evt_1", body: [1], timestamp: at))
        #expect(plain.routingKey == "payment.authorized")
        #expect(plain.properties.headers["CC"] == nil)
        let merchant = router.message(for: .event(exchange: "paypipe.results", type: "payment.authorized", id: "evt_1", body: [1], timestamp: at,
                                                  alsoRoutedAs: ["payment.authorized.merchant-a"]))
        #expect(merchant.routingKey == "payment.authorized")
        #expect(merchant.properties.headers["CC"] == .array([.string("payment.authorized.merchant-a")]))
    }

    @Test func anEventCarriesItsCorrelationIdAndStringHeaders() {
        let at = Date(timeIntervalSince1970: 1_700_000_000)
        let plain = router.message(for: .event(exchange: "paypipe.results", type: "payment.authorized", id: "evt_1", body: [1], timestamp: at))
        #expect(plain.properties.correlationId == nil && plain.properties.headers.isEmpty)
        let correlated = router.message(for: .event(exchange: "paypipe.results", type: "payment.authorized", id: "evt_1", body: [1], timestamp: at,
                                                    alsoRoutedAs: ["payment.authorized.m"], correlationId: "job-1",
                                                    headers: ["jobId": "job-1", "type": "payment.authorized"]))
        #expect(correlated.properties.correlationId == "job-1")
        #expect(correlated.properties.messageId == "evt_1")
        #expect(correlated.properties.headers == ["jobId": .string("job-1"), "type": .string("payment.authorized"),
                                                  "CC": .array([.string("payment.authorized.m")])])
    }
}
