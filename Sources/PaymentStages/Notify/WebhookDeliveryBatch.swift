import Foundation
import Pipeline
import Postgres

/// The set-based form of phase 3 of ``NotifyStage`` for its common case, a batch of answered webhooks: one statement
/// records every attempt in `webhook_deliveries` and marks every payment done, where the per-message path spends two
/// statements per payment (``WebhookDeliveryStore/record(_:event:on:)`` and ``Pipeline/PaymentStore/markDone(_:on:)``).
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
    /// One attempt to record for one payment's event.
    public struct Entry: Sendable {
        public let attempt: WebhookAttempt
        public let event: PaymentEvent

        public init(attempt: WebhookAttempt, event: PaymentEvent) {
            self.attempt = attempt
            self.event = event
        }
    }

    public init() {}

    /// Records the attempts and marks their payments done; returns the ids of the payments settled (the others had no
    /// row written). The entries' payment ids must be distinct (a payment twice in one statement would be settled
    /// once but recorded twice, unlike the per-message path's order of effects).
    public func settle(_ entries: [Entry], on connection: PostgresConnection) throws -> Set<UUID> {
        guard !entries.isEmpty else { return [] }
        precondition(Set(entries.map(\.event.paymentId)).count == entries.count, "one entry per payment")
        let rows = try connection.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int4[], $6::int4[], $7::int4[],
                                     $8::text[], $9::text[], $10::text[])
                    WITH ORDINALITY AS t(payment_id, event_id, event_type, url, attempt, status_code, latency_ms, error, outcome,
                                         delivered_status, n)),
            locked AS (
                SELECT id, stage, status FROM payments WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE),
            done AS (
                UPDATE payments p SET stage = $11, updated_at = clock_timestamp()
                FROM locked JOIN input i ON i.payment_id = locked.id
                WHERE p.id = locked.id AND locked.stage = $12 AND locked.status = i.delivered_status
                RETURNING p.id),
            recorded AS (
                INSERT INTO webhook_deliveries (payment_id, event_id, event_type, url, attempt, status_code, latency_ms, error, outcome)
                SELECT i.payment_id, i.event_id, i.event_type, i.url, i.attempt, i.status_code, i.latency_ms, i.error, i.outcome
                FROM input i JOIN done d ON d.id = i.payment_id
                ORDER BY i.n
                RETURNING payment_id)
            SELECT payment_id FROM recorded
            """,
            [PostgresArray(entries.map(\.event.paymentId)), PostgresArray(entries.map(\.event.id)),
             PostgresArray(entries.map(\.event.type.rawValue)), PostgresArray(entries.map(\.attempt.url)),
             PostgresArray(entries.map { Int32(clamping: $0.attempt.number) }),
             PostgresArray(entries.map { $0.attempt.statusCode.map { Int32(clamping: $0) } }),
             PostgresArray(entries.map { $0.attempt.latencyMs.map { Int32(clamping: $0) } }),
             PostgresArray(entries.map(\.attempt.error)), PostgresArray(entries.map(\.attempt.outcome.rawValue)),
             PostgresArray(entries.map(\.event.status)), PaymentStage.done.rawValue, PaymentStage.notify.rawValue])
        return Set(try rows.map { try $0.decode("payment_id", as: UUID.self) })
    }
}
