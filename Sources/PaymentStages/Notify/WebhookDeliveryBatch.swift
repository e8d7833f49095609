import Foundation
import Pipeline
import Postgres

/// The set-based form of phase 3 of ``NotifyStage`` for its common case, a batch of answered webhooks: one statement
/// (the store's batch `PaymentStore.markDone`) records every attempt in `webhook_deliveries` and marks every payment
/// done, where the per-message path spends two statements per payment (``WebhookDeliveryStore/record(_:event:on:)`` and ``Pipeline/PaymentStore/markDone(_:deliveredStatus:on:)``).
///
/// It writes exactly what those two write (same columns and values; `done` guarded by `stage = 'notify'` and by the
/// status the event delivered), but only
/// for payments whose guarded update matched: a payment no longer at stage `notify` (another worker's duplicate
/// settled it, a replay reset raced) gets nothing here, and the caller hands it to the per-message path, whose
/// semantics (record the attempt anyway, `markDone` a no-op) stay the reference. The rows are locked in id order
/// first, so two lanes settling overlapping batches cannot deadlock.
///
/// The `stage = 'notify'` guard is applied to the locked rows, not to the scan of `payments`: as a scan condition it
/// lets the planner walk the partial index `payments_stage_updated`, whose `notify` entries (dead row versions
/// included, until vacuum) grow with every payment ever notified — in benchmark runs on a fresh, never-analyzed
/// database that plan made notify fall steadily behind (55 million index entries read for 10,000 payments). Locking
/// by id only keeps the statement on the primary key; holding the row locks makes the locked `stage` current.
public struct WebhookDeliveryBatch: Sendable {
    /// One attempt to record for one payment's result.
    public struct Entry: Sendable {
        public let attempt: WebhookAttempt
        public let event: NotifyEvent
        let paymentId: UUID
        let deliveredStatus: String

        public init(attempt: WebhookAttempt, event: PaymentEvent) {
            self.init(attempt: attempt, event: NotifyEvent(event))!
        }

        /// `nil` for an event that is not a payment's result (an operation's is settled one by one).
        public init?(attempt: WebhookAttempt, event: NotifyEvent) {
            guard case .payment(let paymentId, let deliveredStatus) = event.subject else { return nil }
            (self.attempt, self.event, self.paymentId, self.deliveredStatus) = (attempt, event, paymentId, deliveredStatus)
        }
    }

    public init() {}

    /// Records the attempts and marks their payments done; returns the ids of the payments settled (the others had no
    /// row written). The entries' payment ids must be distinct (a payment twice in one statement would be settled
    /// once but recorded twice, unlike the per-message path's order of effects).
    public func settle(_ entries: [Entry], on connection: PostgresConnection) throws -> Set<UUID> {
        guard !entries.isEmpty else { return [] }
        precondition(Set(entries.map(\.paymentId)).count == entries.count, "one entry per payment")
        return try PaymentStore().markDone(entries.map {
            PaymentStore.NotifiedPayment(
                paymentId: $0.paymentId, deliveredStatus: $0.deliveredStatus, eventId: $0.event.id, eventType: $0.event.type,
                url: $0.attempt.url, attempt: Int32(clamping: $0.attempt.number), statusCode: $0.attempt.statusCode.map { Int32(clamping: $0) },
                latencyMs: $0.attempt.latencyMs.map { Int32(clamping: $0) }, error: $0.attempt.error, outcome: $0.attempt.outcome.rawValue)
        }, on: connection)
    }
}
