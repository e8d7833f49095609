import Foundation
@testable import PaymentStages
@testable import Pipeline
import Testing

/// The prepare phase's rule of one request (``OperationSteps/decide(_:_:transport:clock:)``), on the rows its round read
/// under the payment's lock and an injected clock: what it records before any call (the operation and its attempt, a
/// refusal, a new attempt, a review) or what it leads to without a write. No database, no sleep.
@Suite struct OperationPlanDecisionTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let clock = BatchClock(start)
    static let payment = UUID()
    static let authorized = MoneyLifecycle(status: .authorized, captureMode: .manual, authorizedAmount: 1000, capturedAmount: 0)
    static let connector = OperationProtocol.Transport(name: "a connector", operations: .processorOperations)
    static let facts = OperationProtocol.GatewayFacts(transactionReference: "1-2-3", settleStatus: .suspended)

    static func request(_ kind: OperationRequest.Kind = .capture, id: String = "op-1", amount: Int64? = 600) -> OperationRequest {
        OperationRequest(kind: kind, operationId: id, merchantId: "m", payment: .paymentId(payment), amount: amount)
    }

    static func money(_ lifecycle: MoneyLifecycle? = authorized, status: PaymentStatus = .authorized) -> PaymentStore.MoneyState {
        PaymentStore.MoneyState(status: status, lifecycle: lifecycle, settleStatus: nil)
    }

    /// An operation recorded for `request`, in `state`.
    static func recorded(_ request: OperationRequest, state: OperationStore.State, send: GatewayOperation? = .capture(transactionReference: "1-2-3", amount: 600))
        -> OperationStore.Operation {
        OperationStore.Operation(
            id: 41, merchantId: "m", operationId: request.operationId, paymentId: payment, kind: request.kind, requestedBy: .merchant,
            contentHash: request.contentHash, amount: request.amount, state: state, request: send, before: authorized,
            effect: OperationProtocol.Effect(lifecycle: authorized, event: .captured, amount: 600), gatewayReference: nil, errorCode: nil,
            errorMessage: nil, createdAt: start, finishedAt: nil)
    }

    static func attempt(_ id: Int64, _ state: OperationStore.Attempt.State, type: String = "CAPTURE") -> OperationStore.Attempt {
        OperationStore.Attempt(id: id, requestType: type, state: state, outcome: nil, errorCode: nil, transactionReference: nil, settleStatus: nil,
                               settleBaseAmount: nil, reconcileAfter: start.addingTimeInterval(30))
    }

    static func decide(_ input: OperationSteps.PlanInput, request: OperationRequest = request(), clock: BatchClock = clock) -> OperationSteps.PlanDecision {
        OperationSteps().decide(request, input, transport: connector, clock: clock)
    }

    @Test func aNewOperationIsRecordedWithWhatTheRulesDecidedBeforeAnyCall() {
        let input = OperationSteps.PlanInput(payment: Self.payment, money: Self.money(), gateway: Self.facts)
        let snapshot = OperationProtocol.Snapshot(transport: Self.connector, paymentStatus: .authorized, lifecycle: Self.authorized, now: Self.start)
        guard case .send(let send, let effect) = OperationProtocol().decide(Self.request(), snapshot, gateway: Self.facts) else {
            Issue.record("the rules do not send a capture of an authorised payment")
            return
        }
        #expect(Self.decide(input) == .begin(paymentId: Self.payment, send: send, before: Self.authorized, effect: effect))
        // Refused by the rules (more than authorised): recorded failed with the rule's code, nothing sent.
        let over = Self.request(amount: 5000)
        guard case .refuse(let code, let reason) = OperationProtocol().decide(over, snapshot, gateway: Self.facts) else {
            Issue.record("the rules do not refuse an over-capture")
            return
        }
        #expect(Self.decide(input, request: over) == .refuse(paymentId: Self.payment, code: code, reason: reason))
    }

    @Test func aPaymentNotYetKnownOrStillBeforeItsAuthWaitsAndWritesNothing() {
        guard case .plan(.wait("operation_payment_unknown", _, nil)) = Self.decide(.init(payment: nil, money: nil)) else {
            Issue.record("an unknown payment does not wait")
            return
        }
        guard case .plan(.wait("awaiting_authorization", _, nil)) = Self.decide(.init(payment: Self.payment, money: Self.money(nil, status: .prepared)))
        else {
            Issue.record("a payment still in decrypt/submit does not wait")
            return
        }
    }

    @Test func theSameOperationAgainIsReportedOrResumedAndAnotherWithItsIdIsAConflict() {
        let request = Self.request()
        let finished = Self.recorded(request, state: .succeeded)
        #expect(Self.decide(.init(payment: Self.payment, money: Self.money(), existing: finished)) == .plan(.finished(finished)))
        let review = Self.recorded(request, state: .needsReview)
        #expect(Self.decide(.init(payment: Self.payment, money: Self.money(), existing: review)) == .plan(.review(review)))
        // Another content under the same operationId: a conflict, the first untouched (also with no payment resolved).
        let other = Self.recorded(Self.request(amount: 300), state: .succeeded)
        #expect(Self.decide(.init(payment: Self.payment, money: Self.money(), existing: other)) == .plan(.conflict(existing: other)))
        #expect(Self.decide(.init(payment: nil, money: nil, existing: other)) == .plan(.conflict(existing: other)))
        #expect(Self.decide(.init(payment: nil, money: nil, existing: finished)) == .plan(.finished(finished)))
    }

    @Test func aRequestedOperationContinuesFromItsAttemptsOnTheBatchClock() {
        let request = Self.request()
        let open = Self.recorded(request, state: .requested)
        let input = { (attempts: [OperationStore.Attempt]) in
            OperationSteps.PlanInput(payment: Self.payment, money: Self.money(), existing: open, open: open, attempts: attempts)
        }
        // In flight until its reconciliation time: waits, nothing written, back at that time on this worker's clock.
        guard case .plan(.wait("attempt_open", _, Self.start.addingTimeInterval(30))) = Self.decide(input([Self.attempt(7, .sending)])) else {
            Issue.record("an attempt in flight does not wait")
            return
        }
        // Past it: the processor is queried before anything is sent again.
        let late = BatchClock(Self.start.addingTimeInterval(31))
        #expect(Self.decide(input([Self.attempt(7, .uncertain)]), request: request, clock: late) == .resume(open, .query(open.request!)))
        // Known not sent: sent again as a new attempt.
        #expect(Self.decide(input([Self.attempt(7, .notSent)])) == .resume(open, .send(open.request!)))
        // A requested operation with no request attempt goes to review as it is.
        #expect(Self.decide(input([])) == .plan(.review(open)))
    }

    /// A round's decisions come to one list of writes per kind, whatever the round's size, each entry with its
    /// request's place: the new operations, the refusals, the resumed operations' new attempts (a request sent again
    /// under its stored name and with its send window; a status query under the transport's query name, with none),
    /// their reviews; a decision that writes nothing is in none of them.
    @Test func aRoundsDecisionsWriteOneListPerKind() {
        let timing = OperationStore.SendTiming(sendWindow: 5, settleSeconds: 30)
        let planning = { (id: String) in OperationSteps.Planning(request: Self.request(id: id), transport: Self.connector, timing: timing) }
        let open = Self.recorded(Self.request(id: "op-3"), state: .requested)
        let effect = OperationProtocol.Effect(lifecycle: Self.authorized, event: .captured, amount: 600)
        let send = GatewayOperation.capture(transactionReference: "1-2-3", amount: 600)
        let decisions: [OperationSteps.PlanDecision] = [
            .plan(.wait(code: "operation_payment_unknown", reason: "not yet")),
            .refuse(paymentId: Self.payment, code: "amount_exceeds_authorized", reason: "too much"),
            .begin(paymentId: Self.payment, send: send, before: Self.authorized, effect: effect),
            .resume(open, .send(send)),
            .resume(open, .query(send)),
            .resume(open, .review(code: "refund_outcome_unknown", reason: "lost")),
            .refuse(paymentId: Self.payment, code: "operation_in_progress", reason: "open"),
        ]
        let writes = OperationSteps.writes(decisions, (0..<decisions.count).map { planning("op-\($0)") })
        #expect(writes.refusals.map(\.index) == [1, 6])
        #expect(writes.refusals.map(\.row) == [
            OperationStore.Refusal(request: Self.request(id: "op-1"), paymentId: Self.payment, code: "amount_exceeds_authorized", reason: "too much"),
            OperationStore.Refusal(request: Self.request(id: "op-6"), paymentId: Self.payment, code: "operation_in_progress", reason: "open"),
        ])
        #expect(writes.beginnings.map(\.index) == [2])
        #expect(writes.beginnings.map(\.row.request.operationId) == ["op-2"])
        #expect(writes.attempts.map(\.index) == [3, 4])
        #expect(writes.attempts.map(\.row) == [
            OperationStore.NewAttempt(operation: open.id, requestType: Self.connector.requestNames.name(of: send), timing: timing),
            OperationStore.NewAttempt(operation: open.id, requestType: Self.connector.requestNames.query, timing: nil),
        ])
        #expect(writes.attempts.map(\.query) == [false, true])
        #expect(writes.reviews.map(\.index) == [5])
        #expect(writes.reviews.map(\.row) == [OperationStore.Ending(operation: open.id, state: .needsReview, code: "refund_outcome_unknown", reason: "lost")])
    }

    /// The reconciler's automatic voids, decided on the rows their round read under the payments' locks and an injected
    /// clock: an authorisation past its capture deadline is voided (expiry), not before; a late AUTH on a payment up
    /// for review as `late_authorization` is voided whole (a pre-authorisation), nothing for any other payment; an
    /// automatic void recorded earlier is resumed, never a second one; a payment that is gone has nothing to do.
    @Test func automaticVoidsAreDecidedOnTheRoundsRows() {
        let steps = OperationSteps()
        var due = Self.authorized
        due.captureDeadline = Self.start.addingTimeInterval(-1)
        let (expiry, byExpiry) = OperationSteps.automaticVoid(of: Self.payment, merchantId: "m", status: .authorized)
        #expect(expiry.operationId == OperationSteps.expiryOperationId(Self.payment) && byExpiry == .expiry && expiry.kind == .void)
        let authorized = OperationSteps.PaymentFacts(status: .authorized, errorCode: nil, amountMinor: 1000, captureMode: .manual)
        let expired = OperationSteps.PlanInput(payment: Self.payment, money: Self.money(due), gateway: Self.facts)
        let void = GatewayOperation.void(transactionReference: Self.facts.transactionReference)
        guard case .begin(Self.payment, void, due, let effect) = steps.decideVoid(expiry, requestedBy: .expiry, expired, record: authorized,
                                                                                  transport: Self.connector, clock: Self.clock) else {
            Issue.record("an authorisation past its capture deadline is not voided")
            return
        }
        #expect(effect.event == .voided && effect.amount == 1000)
        var notDue = Self.authorized
        notDue.captureDeadline = Self.start.addingTimeInterval(1)
        #expect(steps.decideVoid(expiry, requestedBy: .expiry, .init(payment: Self.payment, money: Self.money(notDue), gateway: Self.facts),
                                 record: authorized, transport: Self.connector, clock: Self.clock) == .plan(.nothing(reason: "not due")))

        let (late, byLate) = OperationSteps.automaticVoid(of: Self.payment, merchantId: "m", status: .needsReview)
        #expect(late.operationId == OperationSteps.lateAuthorizationOperationId(Self.payment) && byLate == .lateAuthorization)
        let review = OperationSteps.PaymentFacts(status: .needsReview, errorCode: "late_authorization", amountMinor: 900, captureMode: .manual)
        let lateInput = OperationSteps.PlanInput(payment: Self.payment, money: Self.money(nil, status: .needsReview), gateway: Self.facts)
        let voided = MoneyLifecycle(status: .voided, captureMode: .automatic, authorizedAmount: 900, capturedAmount: 0)
        #expect(steps.decideVoid(late, requestedBy: .lateAuthorization, lateInput, record: review, transport: Self.connector, clock: Self.clock)
            == .begin(paymentId: Self.payment, send: void, before: nil, effect: .init(lifecycle: voided, event: .voided, amount: 900)))
        var other = review
        other.errorCode = "deadline_exceeded"
        guard case .plan(.nothing) = steps.decideVoid(late, requestedBy: .lateAuthorization, lateInput, record: other, transport: Self.connector,
                                                      clock: Self.clock) else {
            Issue.record("a payment not up for review as a late AUTH is voided")
            return
        }
        // Recorded earlier and finished: reported again, nothing new recorded or sent.
        let earlier = Self.recorded(late, state: .succeeded, send: void)
        var again = lateInput
        again.existing = earlier
        #expect(steps.decideVoid(late, requestedBy: .lateAuthorization, again, record: review, transport: Self.connector, clock: Self.clock)
            == .plan(.finished(earlier)))
        #expect(steps.decideVoid(late, requestedBy: .lateAuthorization, .init(payment: nil, money: nil), record: nil, transport: Self.connector,
                                 clock: Self.clock) == .plan(.nothing(reason: "payment \(late.payment) does not exist")))
    }
}
