import Foundation
import JSON
import PaymentStages
import Pipeline
import Testing

/// The pure parts of endpoint health: the disabling rule and the operational events' shape.
@Suite struct EndpointHealthTests {
    let start = Date(timeIntervalSince1970: 1_767_225_600)
    let endpoint = WebhookEndpoint(merchantId: "m1", url: "https://hooks.example/pp?token=secret")
    let other = WebhookEndpoint(merchantId: "m2", url: "https://other.example/hooks")
    let policy = EndpointHealthPolicy(disableAfter: 5 * 86_400)

    func failure(_ endpoint: WebhookEndpoint, after seconds: Double, _ error: String = "http_503") -> EndpointObservation {
        EndpointObservation(endpoint: endpoint, at: start.addingTimeInterval(seconds), error: error)
    }

    func success(_ endpoint: WebhookEndpoint, after seconds: Double) -> EndpointObservation {
        EndpointObservation(endpoint: endpoint, at: start.addingTimeInterval(seconds), error: nil)
    }

    @Test func aFirstFailureStartsTheFailingPeriod() {
        let decision = policy.decide([failure(endpoint, after: 0, "timeout")], current: [:])
        #expect(decision.disabled.isEmpty)
        #expect(decision.updates[endpoint] == EndpointHealth(failingSince: start, lastFailureAt: start, lastError: "timeout"))
    }

    @Test func failingContinuouslyForThePeriodDisables() {
        let failing = EndpointHealth(failingSince: start, lastFailureAt: start.addingTimeInterval(3600), lastError: "http_500")
        let almost = policy.decide([failure(endpoint, after: 5 * 86_400 - 1)], current: [endpoint: failing])
        #expect(almost.disabled.isEmpty)
        #expect(almost.updates[endpoint]?.failingSince == start, "the period is measured from the first failure")
        let decision = policy.decide([failure(endpoint, after: 5 * 86_400, "connect_failed")], current: [endpoint: failing])
        #expect(decision.disabled == [endpoint])
        let health = decision.updates[endpoint]
        #expect(health?.disabledAt == start.addingTimeInterval(5 * 86_400))
        #expect(health?.disabledReason == EndpointHealthPolicy.failingReason)
        #expect(health?.lastError == "connect_failed")
    }

    @Test func anySuccessEndsTheFailingPeriod() {
        let failing = EndpointHealth(failingSince: start, lastFailureAt: start, lastError: "http_500")
        // Out of order within the batch: the success at +4d sits between failures; the fold goes by time.
        let decision = policy.decide(
            [failure(endpoint, after: 5 * 86_400 + 10), success(endpoint, after: 4 * 86_400), failure(endpoint, after: 4 * 86_400 + 5)],
            current: [endpoint: failing])
        #expect(decision.disabled.isEmpty)
        #expect(decision.updates[endpoint]?.failingSince == start.addingTimeInterval(4 * 86_400 + 5))
        #expect(decision.updates[endpoint]?.lastSuccessAt == start.addingTimeInterval(4 * 86_400))
    }

    @Test func aHealthyEndpointWithoutARowNeedsNoWrite() {
        let decision = policy.decide([success(endpoint, after: 0), failure(other, after: 1), success(other, after: 2)], current: [:])
        #expect(decision.updates.isEmpty)
        #expect(decision.disabled.isEmpty)
    }

    @Test func aDisabledEndpointStaysAsItIs() {
        let disabled = EndpointHealth(failingSince: start, lastFailureAt: start, disabledAt: start, disabledReason: EndpointHealthPolicy.failingReason)
        let decision = policy.decide([success(endpoint, after: 10), failure(endpoint, after: 20)], current: [endpoint: disabled])
        #expect(decision.updates.isEmpty, "only an operator re-enables an endpoint")
        #expect(decision.disabled.isEmpty)
    }

    @Test func eachEndpointIsDecidedOnItsOwn() {
        let failing = EndpointHealth(failingSince: start, lastFailureAt: start, lastError: "http_500")
        let decision = policy.decide(
            [failure(endpoint, after: 6 * 86_400), failure(endpoint, after: 6 * 86_400 + 1), success(other, after: 6 * 86_400)],
            current: [endpoint: failing, other: failing])
        #expect(decision.disabled == [endpoint], "one disabling per endpoint, however many failures the batch has")
        #expect(decision.updates[other]?.failingSince == nil)
        #expect(decision.updates[other]?.disabledAt == nil)
    }

    // MARK: Whether a batch records health at all

    @Test func successesOnEndpointsWithoutARowSkipTheLockedPath() {
        #expect(!EndpointHealthPolicy.mayChange([], tracked: [endpoint]))
        #expect(!EndpointHealthPolicy.mayChange([success(endpoint, after: 0), success(other, after: 1)], tracked: []))
        #expect(!EndpointHealthPolicy.mayChange([success(endpoint, after: 0)], tracked: [other]), "another endpoint's row is not this one's")
    }

    @Test func aFailureOrAnEndpointWithARowTakesTheLockedPath() {
        #expect(EndpointHealthPolicy.mayChange([success(endpoint, after: 0), failure(other, after: 1)], tracked: []),
                "a first failure creates the row")
        #expect(EndpointHealthPolicy.mayChange([success(endpoint, after: 0)], tracked: [endpoint]),
                "a success on a failing (or recovered) endpoint clears failing_since or moves last_success_at")
    }

    /// The shortcut never skips a write ``EndpointHealthPolicy/decide(_:current:)`` would make: over every mix of
    /// successes and failures on two endpoints, each with no row, a failing row or a recovered row, whenever
    /// `mayChange` says no, `decide` on the rows prepare saw changes nothing and disables nothing.
    @Test func theShortcutAgreesWithTheDecision() {
        let failing = EndpointHealth(failingSince: start, lastFailureAt: start, lastError: "http_503")
        let recovered = EndpointHealth(lastFailureAt: start, lastSuccessAt: start.addingTimeInterval(1), lastError: "http_503")
        let rowChoices: [EndpointHealth?] = [nil, failing, recovered]
        let kinds: [[Bool]] = [[], [true], [false], [true, true], [true, false], [false, false]]  // true: success
        var skipped = 0
        for first in rowChoices {
            for second in rowChoices {
                var current: [WebhookEndpoint: EndpointHealth] = [:]
                current[endpoint] = first
                current[other] = second
                for a in kinds {
                    for b in kinds {
                        let observations = a.enumerated().map { $1 ? success(endpoint, after: Double($0) + 10) : failure(endpoint, after: Double($0) + 10) }
                            + b.enumerated().map { $1 ? success(other, after: Double($0) + 10) : failure(other, after: Double($0) + 10) }
                        let decision = policy.decide(observations, current: current)
                        guard !EndpointHealthPolicy.mayChange(observations, tracked: Set(current.keys)) else { continue }
                        skipped += 1
                        #expect(decision.updates.isEmpty && decision.disabled.isEmpty, "\(observations) on \(current)")
                    }
                }
            }
        }
        #expect(skipped > 0)
    }

    // MARK: Operational events

    @Test func endpointDisabledEventShape() throws {
        let health = EndpointHealth(
            failingSince: start, lastFailureAt: start.addingTimeInterval(432_000), lastError: "http_503",
            disabledAt: start.addingTimeInterval(432_000), disabledReason: EndpointHealthPolicy.failingReason)
        let event = OperationalEvent.endpointDisabled(endpoint, health: health)
        let json = try JSONValue.parse(event.body)
        #expect(json["type"]?.stringValue == "endpoint.disabled")
        #expect(json["timestamp"]?.stringValue == "2026-01-06T00:00:00.000Z")
        let data = try #require(json["data"])
        #expect(data["id"]?.stringValue == event.id)
        #expect(event.id.hasPrefix("evt_") && event.id.count == 36 && !event.id.contains("."))
        #expect(data["merchantId"]?.stringValue == "m1")
        #expect(data["url"]?.stringValue == "https://hooks.example/pp", "no query: endpoints carry tokens there")
        #expect(data["endpoint"]?.stringValue == "https://hooks.example:443")
        #expect(data["reason"]?.stringValue == "failing_continuously")
        #expect(data["failingSince"]?.stringValue == "2026-01-01T00:00:00.000Z")
        #expect(data["disabledAt"]?.stringValue == "2026-01-06T00:00:00.000Z")
        #expect(data["lastError"]?.stringValue == "http_503")
        let message = Self.router.message(for: event.message)
        #expect(message.exchange == "paypipe.results" && message.routingKey == "endpoint.disabled")
        #expect(message.properties.messageId == event.id && message.properties.persistent && !message.mandatory)
        #expect(message.properties.type == "endpoint.disabled" && message.properties.appId == "paypipe-notify")
        #expect(OperationalEvent.endpointDisabled(endpoint, health: health).id == event.id, "the same disabling dedupes")
        var later = health
        later.disabledAt = start.addingTimeInterval(900_000)
        #expect(OperationalEvent.endpointDisabled(endpoint, health: later).id != event.id, "a later disabling is a new event")
    }

    @Test func webhookExhaustedEventShape() throws {
        let payment = PaymentEvent(
            type: .declined, paymentId: UUID(uuidString: "00000000-0000-4000-8000-000000000001")!, jobId: "job-1", merchantId: "m1",
            orderReference: nil, amount: nil, gateway: nil, card: nil, errorCode: nil, errorReason: nil, metadata: .object([]),
            receivedAt: start, occurredAt: start)
        let event = OperationalEvent.webhookExhausted(payment, url: "http://user:pw@10.0.0.1:8080/h", attempts: 9, lastError: "timeout", at: start)
        let json = try JSONValue.parse(event.body)
        #expect(json["type"]?.stringValue == "webhook.exhausted")
        let data = try #require(json["data"])
        #expect(data["paymentId"]?.stringValue == "00000000-0000-4000-8000-000000000001")
        #expect(data["eventId"]?.stringValue == payment.id)
        #expect(data["eventType"]?.stringValue == "payment.declined")
        #expect(data["url"]?.stringValue == "http://10.0.0.1:8080/h", "no user info")
        #expect(data["attempts"]?.int64Value == 9)
        #expect(data["lastError"]?.stringValue == "timeout")
        #expect(Self.router.message(for: event.message).routingKey == "webhook.exhausted")
    }

    /// The notify worker's router, which renders the stage's messages for the broker.
    static let router = DeliveryRouter(stage: .notify, retrySchedule: RetrySchedule(delays: [1], maxRetries: 1))
}
