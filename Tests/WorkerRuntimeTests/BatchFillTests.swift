import WorkerRuntime
import Testing

/// The lane's fill policy, decided without a broker: when a batch is handled and how long a lane waits for more.
@Suite struct BatchFillTests {
    let fill = BatchFill(limit: 50, linger: 0.010)

    @Test func aLaneThatKeepsUpHandlesWhatItHasAtOnce() {
        // It waited for its first delivery, or found less than half a batch queued: waiting would only add latency.
        #expect(fill.next(count: 1, foundWaiting: 0, elapsed: 0) == .handle)
        #expect(fill.next(count: 49, foundWaiting: 0, elapsed: 0) == .handle)
        #expect(fill.next(count: 24, foundWaiting: 24, elapsed: 0) == .handle)
        #expect(!fill.isBehind(foundWaiting: 24))
        #expect(fill.isBehind(foundWaiting: 25))
    }

    @Test func aLaneThatFellBehindWaitsOnlyForWhatIsMissingAndOnlyUntilTheLingerPasses() {
        #expect(fill.next(count: 25, foundWaiting: 25, elapsed: 0) == .wait(more: 25, seconds: 0.010))
        #expect(fill.next(count: 45, foundWaiting: 30, elapsed: 0.004) == .wait(more: 5, seconds: 0.006))
        #expect(fill.next(count: 45, foundWaiting: 30, elapsed: 0.010) == .handle, "the linger is a limit, not a minimum")
        #expect(fill.next(count: 45, foundWaiting: 30, elapsed: 0.5) == .handle)
    }

    /// A just started lane meets a backlog whose deliveries are still arriving: its first batch waits up to the linger
    /// to fill whatever it found, so a queued backlog always goes in full batches (scripts/bench --only cost).
    @Test func aLanesFirstBatchWaitsToFillEvenIfItWaitedForItsFirstDelivery() {
        #expect(fill.next(count: 1, foundWaiting: 0, elapsed: 0, first: true) == .wait(more: 49, seconds: 0.010))
        #expect(fill.next(count: 30, foundWaiting: 0, elapsed: 0.004, first: true) == .wait(more: 20, seconds: 0.006))
        #expect(fill.next(count: 30, foundWaiting: 0, elapsed: 0.010, first: true) == .handle, "still only up to the linger")
        #expect(fill.next(count: 50, foundWaiting: 0, elapsed: 0, first: true) == .handle)
        #expect(BatchFill(limit: 50, linger: 0).next(count: 1, foundWaiting: 0, elapsed: 0, first: true) == .handle)
    }

    @Test func aFullBatchNeverWaits() {
        #expect(fill.next(count: 50, foundWaiting: 50, elapsed: 0) == .handle)
        #expect(BatchFill(limit: 1, linger: 1).next(count: 1, foundWaiting: 1, elapsed: 0) == .handle)
    }

    @Test func noLingerIsTheBatchAsReceived() {
        let eager = BatchFill(limit: 50, linger: 0)
        #expect(eager.next(count: 30, foundWaiting: 30, elapsed: 0) == .handle)
    }

    /// Driven the way the lane drives it, against deliveries that arrive one per millisecond: a lane that fell behind
    /// collects what arrives within the linger, and stops once it has passed.
    @Test func aLaneThatFellBehindCollectsWhatArrivesWithinTheLinger() {
        var inHand = 30, clock = 0.0
        while case .wait(let more, let seconds) = fill.next(count: inHand, foundWaiting: 30, elapsed: clock) {
            let arriving = min(more, Int(seconds * 1000))  // one per millisecond until the wait ends
            guard arriving > 0 else { break }
            inHand += arriving
            clock += Double(arriving) / 1000
        }
        #expect(inHand == 40)
        #expect(clock <= fill.linger)
    }
}
