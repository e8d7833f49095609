import Foundation
@testable import PaymentStages
import Testing

/// Circuit breaker per endpoint and concurrency limit per merchant: pure state machines with an injected clock.
@Suite struct GatewayCircuitBreakerTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func opensAfterConsecutiveFailuresAndHalfOpensAfterTheCoolDown() {
        let breaker = GatewayCircuitBreaker(failureThreshold: 3, openSeconds: 10)
        let url = "https://gw.example/jwt/"
        breaker.record(url, healthy: false, now: Self.start)
        breaker.record(url, healthy: false, now: Self.start)
        #expect(breaker.permits(url, now: Self.start))
        breaker.record(url, healthy: false, now: Self.start)
        #expect(!breaker.permits(url, now: Self.start.addingTimeInterval(9.9)))
        #expect(breaker.permits("https://other.example/jwt/", now: Self.start), "circuits are per endpoint")
        // Half-open: requests pass again; one more failure re-opens at once.
        #expect(breaker.permits(url, now: Self.start.addingTimeInterval(10)))
        breaker.record(url, healthy: false, now: Self.start.addingTimeInterval(10))
        #expect(!breaker.permits(url, now: Self.start.addingTimeInterval(15)))
        // A success closes it and resets the count.
        breaker.record(url, healthy: true, now: Self.start.addingTimeInterval(21))
        #expect(breaker.permits(url, now: Self.start.addingTimeInterval(21)))
        breaker.record(url, healthy: false, now: Self.start.addingTimeInterval(22))
        #expect(breaker.permits(url, now: Self.start.addingTimeInterval(22)))
    }

    @Test func aHealthyAnswerBetweenFailuresKeepsItClosed() {
        let breaker = GatewayCircuitBreaker(failureThreshold: 2, openSeconds: 10)
        breaker.record("u", healthy: false, now: Self.start)
        breaker.record("u", healthy: true, now: Self.start)
        breaker.record("u", healthy: false, now: Self.start)
        #expect(breaker.permits("u", now: Self.start))
    }

    @Test func onlyTransportFailuresCount() {
        #expect(GatewayCircuitBreaker.isEndpointFailure("paypipe.transport"))
        #expect(GatewayCircuitBreaker.isEndpointFailure("paypipe.http_503"))
        #expect(GatewayCircuitBreaker.isEndpointFailure("paypipe.http_500"))
        #expect(!GatewayCircuitBreaker.isEndpointFailure("70000"))
        #expect(!GatewayCircuitBreaker.isEndpointFailure("paypipe.signature_invalid"))
        #expect(!GatewayCircuitBreaker.isEndpointFailure(nil))
    }

    @Test func merchantLimiterCapsInFlightCallsPerMerchant() {
        let limiter = MerchantConcurrencyLimiter(limit: 2)
        #expect(limiter.tryAcquire("a"))
        #expect(limiter.tryAcquire("a"))
        #expect(!limiter.tryAcquire("a"))
        #expect(limiter.tryAcquire("b"), "another merchant is not starved")
        limiter.release("a")
        #expect(limiter.inFlight("a") == 1)
        #expect(limiter.tryAcquire("a"))
        limiter.release("a")
        limiter.release("a")
        limiter.release("b")
        #expect(limiter.inFlight("a") == 0)
        #expect(limiter.inFlight("b") == 0)
    }

    @Test func aWaitingCallTakesTheSlotAReleaseGivesBack() async {
        let limiter = MerchantConcurrencyLimiter(limit: 1)
        #expect(limiter.tryAcquire("a"))
        let started = Date()
        // Released after 0.2 s; the waiter's timeout is far longer, so only the release can end its wait in time.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { limiter.release("a") }
        let acquired = await Task.detached { limiter.acquire("a", timeout: 30) }.value
        #expect(acquired)
        #expect(Date().timeIntervalSince(started) < 20, "woken by the release, not by its timeout")
        #expect(limiter.inFlight("a") == 1)
        limiter.release("a")
    }

    @Test func aWaitWithoutAReleaseEndsAtItsTimeoutAndAnUnmatchedReleaseAddsNoSlot() {
        let limiter = MerchantConcurrencyLimiter(limit: 1)
        limiter.release("a")
        #expect(limiter.tryAcquire("a"))
        #expect(!limiter.tryAcquire("a"), "the unmatched release did not raise the limit to 2")
        let started = Date()
        #expect(!limiter.acquire("a", timeout: 0.1))
        #expect(Date().timeIntervalSince(started) >= 0.1)
        #expect(limiter.inFlight("a") == 1)
    }
}
