import Foundation
import PaymentDomain
@testable import PaymentStages
import Pipeline
import Testing

/// What a backend waiting on `paypipe.results` relies on (docs/job-contract.md "Receiving results"): the
/// `correlation_id` and headers of every results message, and the routing keys a per-merchant binding matches.
@Suite struct ResultsMessageTests {
    static let router = DeliveryRouter(stage: .notify, retrySchedule: RetrySchedule(delays: [1], maxRetries: 1))

    @Test func aPaymentResultIsCorrelatedByItsJobIdAndNamesItsIds() {
        for type in PaymentEventType.allCases {
            var event = PaymentEventTests.event(type)
            event.merchantId = "shop.eu-1"
            let message = Self.router.message(for: NotifyEvent(event).resultMessage)
            #expect(message.properties.correlationId == "job-1")
            #expect(message.properties.messageId == event.id, "message_id stays the event id")
            #expect(message.properties.headers.compactMapValues(\.stringValue) == [
                "merchantId": "shop.eu-1", "jobId": "job-1", "paymentId": "6f9619ff-8b86-d011-b42d-00c04fc964ff", "type": type.rawValue,
            ])
            // The merchant routing key is still there (the only non-string header).
            #expect(message.properties.headers["CC"] == .array([.string("\(type.rawValue).shop.eu-1")]))
            #expect(message.routingKey == type.rawValue && message.properties.type == type.rawValue)
        }
    }

    @Test func anOperationEventIsCorrelatedByItsOperationId() {
        let subject = ResultSubject(merchantId: "m1", jobId: "job-1", paymentId: "6f9619ff-8b86-d011-b42d-00c04fc964ff", operationId: "refund-7")
        let message = Self.router.message(for: subject.resultsMessage(
            id: "evt_x", type: "payment.refunded", body: [], timestamp: Date(timeIntervalSince1970: 0), merchantId: "m1"))
        #expect(message.properties.correlationId == "refund-7")
        #expect(message.properties.headers.compactMapValues(\.stringValue) == [
            "merchantId": "m1", "jobId": "job-1", "paymentId": "6f9619ff-8b86-d011-b42d-00c04fc964ff", "operationId": "refund-7",
            "type": "payment.refunded",
        ])
        #expect(message.properties.headers["CC"] == .array([.string("payment.refunded.m1")]))
    }

    @Test func operationalEventsCarryTheIdsTheyHaveButNoMerchantKey() {
        let at = Date(timeIntervalSince1970: 1_767_225_600)
        let exhausted = OperationalEvent.webhookExhausted(PaymentEventTests.event(), url: "https://hooks.example/x", attempts: 3, lastError: "http_500", at: at)
        let message = Self.router.message(for: exhausted.message)
        #expect(message.properties.correlationId == "job-1")
        #expect(message.properties.headers == [
            "merchantId": .string("m1"), "jobId": .string("job-1"), "paymentId": .string("6f9619ff-8b86-d011-b42d-00c04fc964ff"),
            "type": .string("webhook.exhausted"),
        ])
        let disabled = OperationalEvent.endpointDisabled(
            WebhookEndpoint(merchantId: "m2", url: "https://hooks.example/x"),
            health: EndpointHealth(failingSince: at, lastFailureAt: at, lastError: "http_503", disabledAt: at, disabledReason: EndpointHealthPolicy.failingReason))
        let disabledMessage = Self.router.message(for: disabled.message)
        #expect(disabledMessage.properties.correlationId == nil, "about no job")
        #expect(disabledMessage.properties.headers == ["merchantId": .string("m2"), "type": .string("endpoint.disabled")])
    }

    /// `payment.*.<merchantId>` (and `*.*.<merchantId>`) select one merchant exactly, even with dots in merchant ids,
    /// only because every type on `paypipe.results` is two topic words with no wildcard characters: the merchant is
    /// then exactly the words after the second.
    @Test func everyResultsTypeIsTwoTopicWords() {
        let types = PaymentEventType.allCases.map(\.rawValue) + OperationProtocol.Effect.Event.allCases.map(\.rawValue)
            + [OperationEvent.failedType] + OperationalEvent.Kind.allCases.map(\.rawValue)
        for type in types {
            let words = type.split(separator: ".", omittingEmptySubsequences: false)
            #expect(words.count == 2 && words.allSatisfy { !$0.isEmpty && !$0.contains("*") && !$0.contains("#") }, "\(type)")
        }
        #expect(PipelineTopology.merchantResultsKey(type: "payment.authorized", merchantId: "a.b") == "payment.authorized.a.b")
    }
}
