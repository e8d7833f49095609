import Foundation
@testable import PaymentStages
@testable import Pipeline
import Testing

/// What a redelivered or resumed operation does next, decided on its attempts and the batch's clocks (injected here):
/// a request in flight waits until its reconciliation time, a lost answer is queried first (a lost REFUND goes to
/// review, never resent), a request known not sent is sent again. No database, no sleep.
@Suite struct OperationResumptionTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let void = GatewayOperation.void(transactionReference: "1-2-3")

    static func attempt(_ id: Int64, _ state: OperationStore.Attempt.State, type: String = "TRANSACTIONUPDATE", outcome: String? = nil,
                        reconcileAfter: Date? = start.addingTimeInterval(30)) -> OperationStore.Attempt {
        OperationStore.Attempt(id: id, requestType: type, state: state, outcome: outcome, errorCode: nil, transactionReference: nil, settleStatus: nil,
                               settleBaseAmount: nil, reconcileAfter: reconcileAfter)
    }

    static func resume(_ attempts: [OperationStore.Attempt], reconcilable: Bool = true, at clock: BatchClock) -> OperationSteps.Resumption {
        OperationSteps.resumption(of: void, attempts: attempts, reconcilable: reconcilable, maxInconclusiveQueries: 2, clock: clock)
    }

    @Test func anAttemptInFlightWaitsUntilItsReconciliationTimeOnThisWorkersClock() {
        // The database's clock is 5 s behind this worker's: the wait ends 30 s after the database's now, on ours.
        let clock = BatchClock(database: Self.start, worker: Self.start.addingTimeInterval(5))
        #expect(Self.resume([Self.attempt(7, .sending)], at: clock) == .wait(attempt: 7, until: Self.start.addingTimeInterval(35)))
        #expect(Self.resume([Self.attempt(7, .uncertain)], at: clock) == .wait(attempt: 7, until: Self.start.addingTimeInterval(35)))
        // At its reconciliation time, it is queried (never sent again first).
        #expect(Self.resume([Self.attempt(7, .sending)], at: BatchClock(Self.start.addingTimeInterval(30))) == .query)
        #expect(Self.resume([Self.attempt(7, .uncertain)], at: BatchClock(Self.start.addingTimeInterval(31))) == .query)
    }

    @Test func aLostRefundAnswerGoesToReviewAndIsNeverResent() {
        let late = BatchClock(Self.start.addingTimeInterval(60))
        guard case .review(let code, _) = Self.resume([Self.attempt(3, .uncertain, type: "REFUND")], reconcilable: false, at: late) else {
            Issue.record("a lost REFUND answer is not reviewed")
            return
        }
        #expect(code == "refund_outcome_unknown")
    }

    @Test func aRequestKnownNotSentIsSentAgainAndACompletedOneIsUnexpected() {
        let now = BatchClock(Self.start)
        #expect(Self.resume([Self.attempt(1, .notSent)], at: now) == .sendAgain)
        // A query after the not-sent request changes nothing: the last request attempt decides.
        #expect(Self.resume([Self.attempt(1, .notSent), Self.attempt(2, .completed, type: "TRANSACTIONQUERY", outcome: "not_applied")], at: now) == .sendAgain)
        guard case .review("operation_state_unexpected", _) = Self.resume([Self.attempt(1, .completed)], at: now) else {
            Issue.record("a requested operation with a completed attempt is not reviewed")
            return
        }
        #expect(Self.resume([], at: now) == .reviewAsIs)
    }

    @Test func inconclusiveQueriesEndInReviewAfterTheLimit() {
        let late = BatchClock(Self.start.addingTimeInterval(60))
        let lost = Self.attempt(1, .uncertain)
        let inconclusive = { (id: Int64) in Self.attempt(id, .completed, type: "QUERY", outcome: "inconclusive") }
        #expect(Self.resume([lost, inconclusive(2)], at: late) == .query)
        guard case .review("reconciliation_inconclusive", _) = Self.resume([lost, inconclusive(2), inconclusive(3)], at: late) else {
            Issue.record("not reviewed after two inconclusive queries")
            return
        }
    }

    @Test func theBatchClockMapsDatabaseTimesOntoThisWorkersClock() {
        let clock = BatchClock(database: Self.start, worker: Self.start.addingTimeInterval(-3))
        #expect(clock.local(Self.start.addingTimeInterval(10)) == Self.start.addingTimeInterval(7))
        #expect(OperationSteps.reconciliationTime(of: Self.attempt(1, .sending, reconcileAfter: nil), clock: clock) == nil)
    }
}
