import Foundation
@testable import PaymentStages
@testable import Pipeline
import Testing

/// The record phase's rule of one answer (``OperationSteps/decide(_:current:money:lost:clock:)``), on rows as read under
/// a round's locks and an injected clock: what each answer writes to the attempt, the payment's lifecycle and the
/// operation, and what it leads to. No database, no sleep.
@Suite struct OperationRecordDecisionTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let payment = UUID()
    static let authorized = MoneyLifecycle(status: .authorized, captureMode: .manual, authorizedAmount: 1000, capturedAmount: 0)
    static let captured = MoneyLifecycle(status: .captured, captureMode: .manual, authorizedAmount: 1000, capturedAmount: 600)
    static let capture = GatewayOperation.capture(transactionReference: "1-2-3", amount: 600)
    static let refund = GatewayOperation.refund(parentTransactionReference: "1-2-3", amount: 100)
    static let update = OperationProtocol.Transport(name: "updates", operations: .settlementUpdates)
    static let connector = OperationProtocol.Transport(name: "a connector", operations: .processorOperations)

    static func operation(
        _ request: GatewayOperation = capture, state: OperationStore.State = .requested, before: MoneyLifecycle? = authorized,
        effect: MoneyLifecycle = captured, kind: OperationRequest.Kind = .capture, updatedSettleStatus: SettlementState? = nil
    ) -> OperationStore.Operation {
        OperationStore.Operation(
            id: 41, merchantId: "m", operationId: "op-1", paymentId: payment, kind: kind, requestedBy: .merchant, contentHash: [1],
            amount: 600, state: state, request: request, updatedSettleStatus: updatedSettleStatus, before: before,
            effect: OperationProtocol.Effect(lifecycle: effect, event: kind == .refund ? .refunded : .captured, amount: 600),
            gatewayReference: nil, errorCode: nil, errorMessage: nil, createdAt: start, finishedAt: nil)
    }

    static func money(_ lifecycle: MoneyLifecycle? = authorized, status: PaymentStatus = .authorized) -> PaymentStore.MoneyState {
        PaymentStore.MoneyState(status: status, lifecycle: lifecycle, settleStatus: nil)
    }

    static func decide(
        _ answer: OperationSteps.Answer, operation: OperationStore.Operation = operation(), current: OperationStore.Operation?? = nil,
        money: PaymentStore.MoneyState? = money(), transport: OperationProtocol.Transport = connector, lost: OperationStore.Attempt? = nil,
        clock: BatchClock? = BatchClock(start)
    ) throws -> OperationSteps.Decision {
        try OperationSteps().decide(.init(operation: operation, attempt: 7, answer: answer, transport: transport),
                                    current: current ?? operation, money: money, lost: lost, clock: clock)
    }

    @Test func aConfirmedCaptureMovesTheLifecycleItWasDecidedFromAndSucceeds() throws {
        let decision = try Self.decide(.confirmed(transactionReference: "9-9-9"))
        #expect(decision.attempt?.id == 7)
        #expect(decision.attempt?.written == .init(state: .completed, outcome: "succeeded", errorCode: "0", transactionReference: "9-9-9"))
        #expect(decision.lifecycle == PaymentStore.LifecycleChanging(
            paymentId: Self.payment, change: try CheckedLifecycleChange(from: Self.authorized, to: Self.captured), settleStatus: nil,
            operationId: "op-1", detail: "capture op-1: payment.captured 600"))
        #expect(decision.ending == .init(operation: 41, state: .succeeded, gatewayReference: "9-9-9", code: nil, reason: nil))
        #expect(decision.outcome == .finished)
    }

    @Test func aConfirmationOnAPaymentWhoseLifecycleMovedMeanwhileGoesToReviewAndMovesNothing() throws {
        for money in [Self.money(Self.captured), Self.money(status: .needsReview), Self.money(nil),
                      Self.money(MoneyLifecycle(status: .authorized, captureMode: .manual, authorizedAmount: 1000, capturedAmount: 0, refundedAmount: 5))] {
            let decision = try Self.decide(.confirmed(transactionReference: nil), money: money)
            #expect(decision.lifecycle == nil)
            #expect(decision.ending?.state == .needsReview && decision.ending?.code == "operation_state_unexpected")
            #expect(decision.outcome == .review)
            #expect(decision.attempt?.written.outcome == "succeeded", "the gateway's answer is recorded all the same")
        }
    }

    @Test func aConfirmedUpdateBringsItsSettleStatusAndAVoidWithoutLifecycleOnlyEnds() throws {
        let void = GatewayOperation.void(transactionReference: "1-2-3")
        let voided = MoneyLifecycle(status: .voided, captureMode: .manual, authorizedAmount: 1000, capturedAmount: 0)
        let decision = try Self.decide(.confirmed(transactionReference: nil),
                                       operation: Self.operation(void, effect: voided, kind: .void, updatedSettleStatus: .cancelled),
                                       transport: Self.update)
        #expect(decision.lifecycle?.settleStatus == .cancelled && decision.lifecycle?.change.to == voided)
        // A late AUTH's void: no lifecycle was decided from, so none moves; the operation succeeds.
        let late = try Self.decide(.confirmed(transactionReference: nil), operation: Self.operation(void, before: nil, effect: voided, kind: .void),
                                   money: Self.money(nil, status: .needsReview), transport: Self.update)
        #expect(late.lifecycle == nil && late.ending?.state == .succeeded && late.outcome == .finished)
    }

    @Test func anIllegalEdgeIsRefusedBeforeAnythingIsWritten() {
        #expect(throws: CheckedLifecycleChange.Illegal.self) {
            try Self.decide(.confirmed(transactionReference: nil), operation: Self.operation(before: Self.captured, effect: Self.authorized))
        }
    }

    @Test func aRefusalFailsTheOperationAndANotSentAnswerRetriesIt() throws {
        let refused = try Self.decide(.refused(code: "gateway_60017", message: "no"))
        #expect(refused.attempt?.written == .init(state: .completed, outcome: "refused", errorCode: "gateway_60017", errorMessage: "no"))
        #expect(refused.ending == .init(operation: 41, state: .failed, code: "gateway_60017", reason: "no"))
        #expect(refused.lifecycle == nil && refused.outcome == .finished)
        let notSent = try Self.decide(.notSent(code: "paypipe.send_window", reason: "late"))
        #expect(notSent.attempt?.written.state == .notSent && notSent.ending == nil && notSent.lifecycle == nil)
        #expect(notSent.outcome == .retry(code: "paypipe.send_window", reason: "late", until: nil))
    }

    @Test func aLostAnswerIsQueriedAtItsReconciliationTimeOnThisWorkersClockAndALostRefundGoesToReview() throws {
        let lost = OperationStore.Attempt(id: 7, requestType: "CAPTURE", state: .sending, outcome: nil, errorCode: nil, transactionReference: nil,
                                          settleStatus: nil, settleBaseAmount: nil, reconcileAfter: Self.start.addingTimeInterval(30))
        // The database's clock is 5 s behind this worker's.
        let clock = BatchClock(database: Self.start, worker: Self.start.addingTimeInterval(5))
        let uncertain = try Self.decide(.uncertain(code: "timeout", reason: "no answer"), lost: lost, clock: clock)
        #expect(uncertain.attempt?.written.state == .uncertain && uncertain.ending == nil)
        guard case .retry("reconciliation_pending", _, let until) = uncertain.outcome else {
            Issue.record("a lost answer is not reconciled: \(uncertain.outcome)")
            return
        }
        #expect(until == Self.start.addingTimeInterval(35))
        // A REFUND answer lost on a settle-status-updates transport is never resent: review.
        let refund = try Self.decide(.uncertain(code: "timeout", reason: "no answer"),
                                     operation: Self.operation(Self.refund, before: Self.captured, effect: Self.captured, kind: .refund),
                                     transport: Self.update, lost: lost, clock: clock)
        #expect(refund.ending?.state == .needsReview && refund.ending?.code == "refund_outcome_unknown" && refund.outcome == .review)
    }

    @Test func anAnswerForAnOperationNoLongerRequestedIsNotCurrent() {
        for current in [nil, Self.operation(state: .succeeded), Self.operation(state: .needsReview)] as [OperationStore.Operation?] {
            #expect(throws: OperationStore.NotCurrent.self) { try Self.decide(.confirmed(transactionReference: nil), current: .some(current)) }
        }
    }

    // MARK: Status queries of lost answers (``OperationSteps/decide(_:current:money:attempts:)``)

    static func attempt(_ id: Int64, _ type: String, _ state: OperationStore.Attempt.State) -> OperationStore.Attempt {
        OperationStore.Attempt(id: id, requestType: type, state: state, outcome: nil, errorCode: nil, transactionReference: nil, settleStatus: nil,
                               settleBaseAmount: nil, reconcileAfter: nil)
    }

    /// A capture sent as attempt 5 (answer lost), queried by attempt 9.
    static let queriedAttempts = [attempt(5, "CAPTURE", .uncertain), attempt(9, "QUERY", .sending)]

    static func query(
        _ evidence: Result<OperationProtocol.Evidence, OperationQueryFailure>, operation: OperationStore.Operation = operation(),
        current: OperationStore.Operation?? = nil, money: PaymentStore.MoneyState? = money(), attempts: [OperationStore.Attempt] = queriedAttempts
    ) throws -> OperationSteps.Decision {
        try OperationSteps().decide(.init(operation: operation, query: 9, evidence: evidence), current: current ?? operation, money: money,
                                    attempts: attempts)
    }

    @Test func aQueryShowingTheCaptureTookEffectCompletesTheLostAttemptAndSucceedsAsAConfirmationWould() throws {
        let decision = try Self.query(.success(.transactions([.init(kind: .capture, amount: 600, result: .succeeded, id: "cap-1")])))
        #expect(decision.attempt?.id == 9 && decision.attempt?.written == .init(state: .completed, outcome: "took_effect"))
        #expect(decision.lost?.id == 5 && decision.lost?.written == .init(state: .completed, outcome: "succeeded", errorMessage: "confirmed by status query 9"))
        #expect(decision.lifecycle?.change.to == Self.captured && decision.lifecycle?.operationId == "op-1")
        #expect(decision.ending == .init(operation: 41, state: .succeeded, gatewayReference: "cap-1", code: nil, reason: nil))
        #expect(decision.outcome == .finished)
        // Took effect, but the payment moved meanwhile: review, nothing moves.
        let moved = try Self.query(.success(.transactions([.init(kind: .capture, amount: 600, result: .succeeded)])), money: Self.money(Self.captured))
        #expect(moved.lifecycle == nil && moved.ending?.code == "operation_state_unexpected" && moved.outcome == .review)
    }

    @Test func aQueryShowingTheUpdateNotAppliedFreesTheLostAttemptForANewSend() throws {
        let capture = GatewayOperation.capture(transactionReference: "1-2-3", amount: 600)
        let decision = try Self.query(.success(.settlement(.init(settleStatus: .suspended, settleBaseAmount: 1000))),
                                      operation: Self.operation(capture), attempts: [Self.attempt(5, "TRANSACTIONUPDATE", .sending),
                                                                                     Self.attempt(9, "TRANSACTIONQUERY", .sending)])
        #expect(decision.attempt?.written == .init(state: .completed, outcome: "not_applied", settleStatus: "2", settleBaseAmount: 1000))
        #expect(decision.lost?.id == 5 && decision.lost?.written.state == .notSent && decision.lost?.written.outcome == "not_applied")
        #expect(decision.lifecycle == nil && decision.ending == nil)
        guard case .retry("operation_not_applied", _, nil) = decision.outcome else {
            Issue.record("not applied does not send again: \(decision.outcome)")
            return
        }
    }

    @Test func anInconclusiveOrFailedQueryOnlyRecordsItselfAndALostRefundTheQueryDoesNotShowGoesToReview() throws {
        let inconclusive = try Self.query(.success(.payment(nil)))
        #expect(inconclusive.attempt?.written.outcome == "inconclusive" && inconclusive.attempt?.written.errorCode == "reconciliation_inconclusive")
        #expect(inconclusive.lost == nil && inconclusive.lifecycle == nil && inconclusive.ending == nil)
        guard case .retry("reconciliation_inconclusive", _, nil) = inconclusive.outcome else {
            Issue.record("inconclusive: \(inconclusive.outcome)")
            return
        }
        // A query that could not be made: recorded inconclusive with its code, retried; even for an operation no
        // longer requested (its attempt is then not open, and the write refuses it).
        let failed = try Self.query(.failure(OperationQueryFailure(code: "timeout", reason: "no answer")), current: .some(nil))
        #expect(failed.attempt?.written == .init(state: .completed, outcome: "inconclusive", errorCode: "timeout", errorMessage: "no answer"))
        #expect(failed.outcome == .retry(code: "reconciliation_inconclusive", reason: "status query failed: timeout: no answer", until: nil))
        let refund = try Self.query(.success(.transactions([])),
                                    operation: Self.operation(Self.refund, before: Self.captured, effect: Self.captured, kind: .refund),
                                    attempts: [Self.attempt(5, "REFUND", .uncertain), Self.attempt(9, "QUERY", .sending)])
        #expect(refund.ending?.state == .needsReview && refund.ending?.code == "refund_outcome_unknown" && refund.outcome == .review)
        #expect(refund.lost == nil && refund.lifecycle == nil, "a lost refund is never marked not sent")
    }

    @Test func aFoundQueryForAnOperationNoLongerRequestedIsNotCurrent() {
        for current in [nil, Self.operation(state: .succeeded), Self.operation(state: .needsReview)] as [OperationStore.Operation?] {
            #expect(throws: OperationStore.NotCurrent.self) { try Self.query(.success(.payment(nil)), current: .some(current)) }
        }
    }
}
