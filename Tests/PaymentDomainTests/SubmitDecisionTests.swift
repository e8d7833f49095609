import Foundation
import PaymentDomain
import Testing

/// Submit's batch decisions without services, on an injected clock: the database's time is data (read once per batch),
/// so what happens on either side of an attempt's reconciliation time, the payment deadline and a confirming query's
/// due time is decided here, never by waiting for PostgreSQL's clock.
@Suite struct SubmitDecisionTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let machine = SubmitProtocol(paymentDeadline: 600, maxInconclusiveQueries: 2, notFoundConfirmations: 2)
    static let a = UUID(), b = UUID(), c = UUID()

    /// A payment `submitting` with attempt 7 open, queryable `settle` seconds after `start`.
    static func submitting(settle: Double = 1.5, state: GatewayAttemptState = .uncertain) -> SubmitDecision.Locked {
        SubmitDecision.Locked(status: .submitting, firstReceivedAt: start,
                              latest: SubmitProtocol.Attempt(id: 7, state: state, reconcileAfter: start.addingTimeInterval(settle)))
    }

    static func plan(_ ids: [UUID], _ locked: [UUID: SubmitDecision.Locked], at seconds: Double,
                     gateways: [UUID: SubmitProtocol.Gateway] = [:]) -> [SubmitDecision.Planned] {
        SubmitDecision.plan(ids, locked: locked, now: start.addingTimeInterval(seconds), gateways: gateways, machine: machine)
    }

    static func kind(_ planned: SubmitDecision.Planned) -> String {
        guard case .plan(let plan, _) = planned else { return "\(planned)" }
        switch plan {
        case .handOff: return "handOff"
        case .wait(let code, _, _): return "wait \(code)"
        case .end(let status, let code, _): return "end \(status.rawValue) \(code)"
        case .send: return "send"
        case .query(let id): return "query \(id)"
        case .rearm: return "rearm"
        }
    }

    /// What the 1.6 s sleeps of `SubmitStageTests` waited for: before the reconciliation time an open attempt is
    /// waited for (until exactly that time), from it on it is queried.
    @Test func anOpenAttemptIsQueriedOnlyFromItsReconciliationTime() {
        let locked = [Self.a: Self.submitting()]
        guard case .plan(.wait(let code, _, let until), let snapshot) = Self.plan([Self.a], locked, at: 1.4)[0] else {
            Issue.record("not a wait")
            return
        }
        #expect(code == "awaiting_reconciliation")
        #expect(until == Self.start.addingTimeInterval(1.5))
        #expect(snapshot.now == Self.start.addingTimeInterval(1.4), "the batch's database time is the snapshot's")
        #expect(Self.plan([Self.a], locked, at: 1.5).map(Self.kind) == ["query 7"])
        #expect(Self.plan([Self.a], locked, at: 3600).map(Self.kind) == ["query 7"])
    }

    @Test func theBatchTimeDecidesThePaymentDeadline() {
        let prepared = [Self.a: SubmitDecision.Locked(status: .prepared, firstReceivedAt: Self.start)]
        #expect(Self.plan([Self.a], prepared, at: 600).map(Self.kind) == ["send"])
        #expect(Self.plan([Self.a], prepared, at: 600.001).map(Self.kind) == ["end failed deadline_exceeded"])
    }

    @Test func aSecondNotFoundIsDueOnlyAfterTheConfirmationSpacing() {
        var locked = Self.submitting()
        locked.notFoundQueries = 1
        locked.lastNotFound = Self.start.addingTimeInterval(100)
        #expect(Self.plan([Self.a], [Self.a: locked], at: 109).map(Self.kind) == ["wait awaiting_confirmation"])
        #expect(Self.plan([Self.a], [Self.a: locked], at: 110).map(Self.kind) == ["query 7"])
    }

    /// One decide for any batch: unknown payments, each payment's first message decides, and the later ones follow it.
    @Test func theFirstMessageForAPaymentDecidesTheBatch() {
        let locked: [UUID: SubmitDecision.Locked] = [
            Self.a: SubmitDecision.Locked(status: .prepared, firstReceivedAt: Self.start),
            Self.b: SubmitDecision.Locked(status: .authorized, firstReceivedAt: Self.start),
            Self.c: Self.submitting(),
        ]
        let unknown = UUID()
        let planned = Self.plan([Self.a, unknown, Self.b, Self.c, Self.a, Self.b, Self.c], locked, at: 1)
        #expect(planned.map(Self.kind) == ["send", "unknown", "handOff", "wait awaiting_reconciliation", "inFlight", "handOff", "sameAs(3)"])
    }

    @Test func aLaterMessageOfAPaymentTheFirstEndsIsHandedOff() {
        let locked = [Self.a: SubmitDecision.Locked(status: .prepared, firstReceivedAt: Self.start)]
        let planned = Self.plan([Self.a, Self.a], locked, at: 1, gateways: [Self.a: .notConfigured("no gateway")])
        #expect(planned.map(Self.kind) == ["end failed gateway_not_configured", "handOff"])
    }

    /// Recording decides on the record transaction's own read and time: an answer for the current attempt ends the
    /// payment; one for an attempt that is no longer current is evidence; an unknown payment has no decision.
    @Test func answersAreDecidedOnTheRecordRead() {
        let authorised = GatewayResult(outcome: .authorized, errorCode: "0", transactionReference: "1-2-3", settleStatus: "0")
        let locked: [UUID: SubmitDecision.Locked] = [
            Self.a: Self.submitting(state: .sending),
            Self.b: SubmitDecision.Locked(status: .failed, firstReceivedAt: Self.start,
                                          latest: SubmitProtocol.Attempt(id: 9, state: .completed, reconcileAfter: Self.start)),
        ]
        let answers = [
            SubmitDecision.Answered(paymentId: Self.a, attemptId: 7, answer: .sent(authorised)),
            SubmitDecision.Answered(paymentId: Self.b, attemptId: 9, answer: .sent(authorised)),
            SubmitDecision.Answered(paymentId: Self.c, attemptId: 1, answer: .sent(authorised)),
            SubmitDecision.Answered(paymentId: Self.a, attemptId: 6, answer: .queried(.notFound)),
        ]
        let decided = SubmitDecision.record(answers, locked: locked, now: Self.start, machine: Self.machine)
        #expect(decided[0] == .end(authorised, TerminalDecision(authorised)))
        #expect(decided[1] == .evidence(authorised, lateAuthorization: true))
        #expect(decided[2] == nil)
        #expect(decided[3] == .evidence(nil, lateAuthorization: false))
    }
}
