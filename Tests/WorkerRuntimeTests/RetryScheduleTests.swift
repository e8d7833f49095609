import Testing
@testable import WorkerRuntime

@Suite struct RetryScheduleTests {
    @Test func tiersEscalateThenRepeatTheLast() {
        let schedule = RetrySchedule(delays: [1, 5, 30], maxRetries: 5)
        #expect(schedule.decision(previousRetries: 0) == .retry(tier: 0, delay: 1))
        #expect(schedule.decision(previousRetries: 1) == .retry(tier: 1, delay: 5))
        #expect(schedule.decision(previousRetries: 2) == .retry(tier: 2, delay: 30))
        #expect(schedule.decision(previousRetries: 4) == .retry(tier: 2, delay: 30))
        #expect(schedule.decision(previousRetries: 5) == .exhausted)
    }

    @Test func zeroRetriesExhaustImmediately() {
        #expect(RetrySchedule(delays: [1], maxRetries: 0).decision(previousRetries: 0) == .exhausted)
    }

    @Test func queueNamesCarryTheDelay() {
        let schedule = RetrySchedule(delays: [0.25, 5, 120], maxRetries: 3)
        #expect(schedule.queueName(for: .submit, tier: 0) == "paypipe.submit.retry.250ms")
        #expect(schedule.queueName(for: .submit, tier: 1) == "paypipe.submit.retry.5s")
        #expect(schedule.queueName(for: .notify, tier: 2) == "paypipe.notify.retry.120s")
    }

    @Test func parsesDelayLists() {
        #expect(RetrySchedule.parseDelays("1s, 500ms,2m") == [1, 0.5, 120])
        #expect(RetrySchedule.parseDelays("") == nil)
        #expect(RetrySchedule.parseDelays("1s,0s") == nil)
        #expect(RetrySchedule.parseDelays("1s,abc") == nil)
    }

}
