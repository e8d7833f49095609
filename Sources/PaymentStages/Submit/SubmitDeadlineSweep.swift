import Foundation
import Pipeline
import Postgres

/// The submit stage's part of each reconciler round (its ``ReconcilingStage`` hook, wired in the launch file), off
/// one payment's path: fails every payment stuck in `decrypted` or `prepared` past the payment deadline
/// (`deadline_exceeded`), which shreds its card data, so card data is never kept longer than the deadline whichever
/// stage lost the payment. The protocol decides (``SubmitProtocol/mayExpire(_:)``): never while an attempt may be in
/// flight. Claims with `SKIP LOCKED`, so it never waits for a lane and never races one.
struct SubmitDeadlineSweep {
    let requests: GatewayRequestStore
    let machine: SubmitProtocol
    /// The reconciliation time of an attempt written before migration 5 (``SubmitStage``'s batch read).
    let legacySettleSeconds: Double
    private let payments = PaymentStore()

    /// One round: the payments it failed, with their hand-offs to notification.
    func expire(on connection: PostgresConnection) throws -> [(stage: Stage, message: StageMessage)] {
        try connection.transaction { transaction in
            let rows = try transaction.query(
                """
                SELECT \(SubmitPlanStatement.Payment.columns), p.trace_parent, p.trace_state FROM payments p
                WHERE stage IN ('authorize', 'submit') AND status IN ('decrypted', 'prepared')
                  AND first_received_at < clock_timestamp() - make_interval(secs => $1)
                ORDER BY first_received_at LIMIT 500
                FOR UPDATE SKIP LOCKED
                """, [machine.paymentDeadline])
            let claimed = try rows.map(SubmitPlanStatement.Payment.init(row:))
            // Their hand-offs to notification continue each payment's trace.
            let traced = Dictionary(uniqueKeysWithValues: try rows.map { row in
                let message = try PaymentStore.tracedMessage(row: row)
                return (message.paymentId, message)
            })
            // Claimed (locked) above: read without locking again.
            let read = try SubmitPlanStatement.read(
                claimed.map(\.id), legacySettleSeconds: legacySettleSeconds, requests: requests, on: transaction)
            let expiring = claimed.filter { payment in
                guard let locked = read.rows[payment.id]?.locked else { return false }
                return machine.mayExpire(locked.snapshot(now: read.now))
            }
            // One statement for the batch; the trigger crypto-shreds their card data.
            try payments.transitionBatch(expiring.map { payment in
                try PaymentStore.Transitioning(
                    paymentId: payment.id, from: payment.status, to: .failed, errorCode: "deadline_exceeded",
                    detail: "still \(payment.status.rawValue) after the payment deadline of \(Int(machine.paymentDeadline))s")
            }, actor: SubmitStage.actor, on: transaction)
            return expiring.map { (Stage.notify, traced[$0.id] ?? $0.message) }
        }
    }
}
