import Foundation
import Postgres

/// Deferred payments' writes and reads (a job with `amountPending`; ``DeferredAmount`` holds the rules): parked by
/// authorize, completed or expired by the operations worker. Set-based, each write guarded by the status it expects.
/// The completion's locked read, `deferredSnapshots`, lives with the operations worker's deferred completion, which runs it
/// (`PaymentStages/Operations/DeferredCompletion.swift`).
extension PaymentStore {
    static let completionActor = "operations"

    /// `decrypted → awaiting_amount`: the payments wait for their amount, in no stage's queue. Returns those changed.
    public func awaitAmount(_ ids: [UUID], actor: String, on transaction: PostgresConnection) throws -> Set<UUID> {
        guard !ids.isEmpty else { return [] }
        return try move(ids.map { ($0, nil) }, by: try CheckedTransition(from: .decrypted, to: .awaitingAmount), actor: actor, on: transaction)
    }

    /// `awaiting_amount → decrypted` with each completion's amount, stamped `amount_completed_at`: back to authorize,
    /// which now builds the request with that amount. Returns those changed.
    public func completeAmount(_ rows: [(id: UUID, amount: Int64)], on transaction: PostgresConnection) throws -> Set<UUID> {
        guard !rows.isEmpty else { return [] }
        return try move(rows.map { ($0.id, $0.amount) }, by: try CheckedTransition(from: .awaitingAmount, to: .decrypted),
                        actor: Self.completionActor, on: transaction)
    }

    /// One guarded status change for a batch, with its audit events; an amount, when given, replaces the payment's and
    /// stamps the completion.
    private func move(_ rows: [(id: UUID, amount: Int64?)], by transition: CheckedTransition, actor: String,
                      on transaction: PostgresConnection) throws -> Set<UUID> {
        let updated = try transaction.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::bigint[]) WITH ORDINALITY AS t(id, amount, n)),
            updated AS (
                UPDATE payments p SET status = $4::text, stage = $5::text, updated_at = clock_timestamp(),
                       amount_minor = coalesce(input.amount, p.amount_minor),
                       amount_completed_at = CASE WHEN input.amount IS NULL THEN p.amount_completed_at ELSE clock_timestamp() END
                FROM input WHERE p.id = input.id AND p.status = $3::text
                RETURNING p.id),
            event AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor, detail)
                SELECT input.id, $3::text, $4::text, $5::text, $6::text,
                       CASE WHEN input.amount IS NULL THEN NULL ELSE 'amount ' || input.amount END
                FROM input JOIN updated USING (id) ORDER BY input.n)
            SELECT id FROM updated
            """,
            [
                PostgresArray(rows.map(\.id)), PostgresArray(rows.map(\.amount)),
                transition.from?.rawValue, transition.to.rawValue, transition.stage.rawValue, actor,
            ])
        return Set(try updated.map { try $0.decode("id", as: UUID.self) })
    }

    /// How many payments wait for their amount now (`paypipe_payments_awaiting_amount`; the partial index
    /// `payments_awaiting_amount` holds exactly them).
    public func awaitingAmountCount(on connection: PostgresConnection) throws -> Int {
        Int(try connection.query("SELECT count(*) AS n FROM payments WHERE status = $1", [PaymentStatus.awaitingAmount.rawValue])[0]
            .decode("n", as: Int64.self))
    }

    /// Payments waiting for their amount, the longest-waiting first: what the expiry sweep decides on.
    public func awaitingAmount(limit: Int, on connection: PostgresConnection) throws -> [(message: StageMessage, receivedAt: Date)] {
        try connection.query(
            """
            SELECT id, merchant_id, job_id, first_received_at, trace_parent, trace_state FROM payments
            WHERE status = $1 ORDER BY first_received_at LIMIT $2
            """, [PaymentStatus.awaitingAmount.rawValue, Int64(limit)]).map { row in
            (try Self.tracedMessage(row: row), try row.decode("first_received_at", as: Date.self))
        }
    }
}
