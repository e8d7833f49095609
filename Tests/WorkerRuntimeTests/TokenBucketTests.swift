import Foundation
import WorkerRuntime
import Testing

/// The endpoint gate's token bucket, as a value with a hand-moved clock.
@Suite struct TokenBucketTests {
    let start = Date(timeIntervalSince1970: 1_767_225_600)

    @Test func tokenBucketAllowsABurstThenTheRate() {
        var bucket = TokenBucket(rate: 2, now: start)
        #expect(bucket.reserve(at: start, maxWait: 1) == .after(0))
        #expect(bucket.reserve(at: start, maxWait: 1) == .after(0))
        // Empty: the next tokens are booked half a second apart.
        #expect(bucket.reserve(at: start, maxWait: 1) == .after(0.5))
        #expect(bucket.reserve(at: start, maxWait: 1) == .after(1))
        #expect(bucket.reserve(at: start, maxWait: 1) == .refused(wait: 1.5), "more than maxWait away: nothing booked")
        #expect(bucket.reserve(at: start.addingTimeInterval(1), maxWait: 0) == .refused(wait: 0.5))
        #expect(bucket.reserve(at: start.addingTimeInterval(1.5), maxWait: 0) == .after(0))
        #expect(!bucket.isFull(at: start.addingTimeInterval(1.5)))
        #expect(bucket.isFull(at: start.addingTimeInterval(2.5)))
    }

    @Test func tokenBucketNeverExceedsItsRateOverTime() {
        var bucket = TokenBucket(rate: 5, now: start)
        var granted = 0
        // Ten seconds of callers every 10 ms, none willing to wait.
        for step in 0..<1000 where bucket.reserve(at: start.addingTimeInterval(Double(step) * 0.01), maxWait: 0) == .after(0) {
            granted += 1
        }
        #expect(granted <= 5 + 5 * 10, "burst + rate × time")
        #expect(granted >= 5 * 10 - 1)
    }

    @Test func tokenBucketRetunesKeepingItsSavings() {
        var bucket = TokenBucket(rate: 10, now: start)
        bucket.retune(rate: 1, at: start)
        #expect(bucket.capacity == 1)
        #expect(bucket.reserve(at: start, maxWait: 0) == .after(0))
        #expect(bucket.reserve(at: start, maxWait: 0) == .refused(wait: 1))
        let slow = TokenBucket(rate: 0.5, now: start)
        #expect(slow.capacity == 1, "at least one token, so a slow rate still lets one through")
    }
}
