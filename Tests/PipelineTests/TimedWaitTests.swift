import AMQP
import Foundation
import Pipeline
import Testing

/// Issue 40, defect 3: a wait whose end is known comes back at that time, not on the fixed retry tiers. The protocol's
/// decision carries the instant (an uncertain AUTH's `reconcile_after`), and the runtime's retry routing re-drives the
/// message then, driven here by an injected clock (no broker, no sleeping): each copy expires after exactly its tier's
/// delay (so no earlier message in the tier holds it back), and the clock advances by that expiration per hop, as the
/// tier queue does.
@Suite struct TimedWaitTests {
    let schedule = RetrySchedule.standard
    var router: DeliveryRouter { DeliveryRouter(stage: Stage.submit.name, retrySchedule: schedule) }

    /// A delivery as the retry tiers dead-letter it back through the stages exchange, already retried `retries` times.
    func delivery(retries: Int, properties: AMQPProperties = AMQPProperties()) -> AMQPDelivery {
        var properties = properties
        properties.expiration = nil
        properties.headers[DeliveryRouter.Header.retries] = .int(Int64(retries))
        return AMQPDelivery(body: Array(#"{"paymentId":"p"}"#.utf8), properties: properties, exchange: BrokerLayout.stagesExchange,
                            routingKey: "submit", redelivered: false, deliveryTag: 1, generation: 1)
    }

    /// Runs the wait loop: the handler decides on each delivery (the payment's protocol, on the database clock, here
    /// the same clock); the runtime routes its decision; the copy comes back when its expiration has passed. Returns
    /// when the protocol stops waiting: the clock then, and the hops taken.
    func comeBack(reconcileAfter: Date, start: Date, retries: Int) throws -> (at: Date, hops: Int) {
        let machine = SubmitProtocol()
        var clock = start
        var message = delivery(retries: retries)
        var hops = 0
        while true {
            let snapshot = SubmitProtocol.Snapshot(status: .submitting, firstReceivedAt: start, now: clock,
                                                   latest: SubmitProtocol.Attempt(id: 7, state: .uncertain, reconcileAfter: reconcileAfter))
            guard case .wait(let code, let reason, let until?) = machine.plan(snapshot) else { return (clock, hops) }
            let failure = StageFailure.waiting(code: code, reason: reason, until: until, decidedAt: snapshot.now, now: clock)
            let (copy, exhausted) = router.retry(message, after: failure, now: clock)
            #expect(!exhausted)
            #expect(copy.properties.headers[DeliveryRouter.Header.retries] == .int(Int64(retries)), "a timed wait is not counted as a retry")
            let expiration = try #require(copy.properties.expiration.flatMap(Double.init)) / 1000
            let tier = try #require(schedule.delays.firstIndex(of: expiration), "the copy expires exactly when its tier's TTL does")
            #expect(copy.routingKey == schedule.queueName(for: Stage.submit.name, tier: tier))
            clock = clock.addingTimeInterval(expiration)
            message = delivery(retries: retries, properties: copy.properties)
            hops += 1
            #expect(hops < 50, "the wait ends")
            if hops >= 50 { return (clock, hops) }
        }
    }

    @Test("an uncertain AUTH is queried within the shortest tier after its reconcile_after",
          arguments: [0.3, 1, 4.5, 65, 100, 119, 121, 599, 1300] as [Double])
    func anUncertainAuthComesBackAtItsReconciliationTime(wait: Double) throws {
        let start = Date(timeIntervalSince1970: 2_000_000_000)
        let reconcileAfter = start.addingTimeInterval(wait)
        // Already retried three times (1, 5 and 30 s): the fixed schedule's next tier is 120 s, as in the incident.
        let back = try comeBack(reconcileAfter: reconcileAfter, start: start, retries: 3)
        let late = back.at.timeIntervalSince(reconcileAfter)
        #expect(late >= 0 && late <= schedule.delays[0], "back \(late) s after reconcile_after (\(back.hops) hops)")
    }

    /// What the fixed tiers did with the same wait (the defect): the 4th retry of a 65 s wait is parked for 96-120 s.
    @Test func theFixedScheduleWouldHaveParkedIt() throws {
        let (copy, _) = router.retry(delivery(retries: 3), after: .transient(code: "awaiting_reconciliation", reason: "r"))
        #expect(copy.routingKey == "paypipe.submit.retry.120s")
        #expect(try #require(copy.properties.expiration.flatMap(Double.init)) >= 96_000)
    }

    @Test func theProtocolsWaitsCarryTheirTime() {
        let now = Date(timeIntervalSince1970: 2_000_000_000)
        let machine = SubmitProtocol()
        let open = SubmitProtocol.Attempt(id: 3, state: .sending, reconcileAfter: now.addingTimeInterval(65))
        guard case .wait("awaiting_reconciliation", _, let until) = machine.plan(.init(status: .submitting, firstReceivedAt: now, now: now, latest: open)) else {
            Issue.record("not waiting for reconciliation")
            return
        }
        #expect(until == open.reconcileAfter)
        let queried = SubmitProtocol.Attempt(id: 3, state: .uncertain, reconcileAfter: now.addingTimeInterval(-5))
        let notFound = now.addingTimeInterval(-2)
        guard case .wait("awaiting_confirmation", _, let due) = SubmitProtocol(notFoundConfirmations: 2).plan(
            .init(status: .submitting, firstReceivedAt: now, now: now, latest: queried, notFoundQueries: 1, lastNotFound: notFound)) else {
            Issue.record("not waiting for a confirming query")
            return
        }
        #expect(due == notFound.addingTimeInterval(SubmitProtocol.confirmationSpacing))
    }

    @Test func theRuntimeReadsTheWaitOnItsOwnClock() {
        // The database's clock is two minutes ahead of the worker's: the same 65 s still to wait.
        let database = Date(timeIntervalSince1970: 2_000_000_120), worker = Date(timeIntervalSince1970: 2_000_000_000)
        let failure = StageFailure.waiting(code: "c", reason: "r", until: database.addingTimeInterval(65), decidedAt: database, now: worker)
        #expect(failure == .waiting(code: "c", reason: "r", until: worker.addingTimeInterval(65)))
    }

    /// A wait beyond the whole schedule, or for an instant long past, is an ordinary counted retry: no wait can loop
    /// without a budget.
    @Test func staleOrFarWaitsAreCounted() throws {
        let now = Date(timeIntervalSince1970: 2_000_000_000)
        for until in [now.addingTimeInterval(schedule.maximumWait + 1), now.addingTimeInterval(-60)] {
            let (copy, _) = router.retry(delivery(retries: 0), after: .waiting(code: "c", reason: "r", until: until), now: now)
            #expect(copy.properties.headers[DeliveryRouter.Header.retries] == .int(1))
        }
    }
}
