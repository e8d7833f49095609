import Foundation
import Pipeline
import Postgres

/// The reconciler's part of operations: the payments it hands to this stage every `PAYPIPE_RECONCILE_INTERVAL`.
extension OperationsStage {
    /// Payments whose late AUTH is to be voided, or whose manual authorisation was not captured within
    /// `captureWithin`, each handed to this stage once per reconciler round (their void is idempotent: one operation
    /// per payment); and the deferred payments whose credential expired (``expireDeferred(clock:on:)``), to notify.
    /// Runs on the reconciler thread every `PAYPIPE_RECONCILE_INTERVAL`.
    public func reconcile(on connection: PostgresConnection) throws -> [(stage: Stage, message: StageMessage)] {
        let rows = try connection.query(
            """
            (SELECT p.id, p.merchant_id, p.job_id, p.trace_parent, p.trace_state FROM payments p
             WHERE p.status = 'needs_review' AND p.error_code = 'late_authorization'
               AND NOT EXISTS (SELECT 1 FROM payment_operations o WHERE o.merchant_id = p.merchant_id AND o.operation_id = 'late-authorization-' || p.id::text)
             ORDER BY p.updated_at LIMIT 100)
            UNION ALL
            (SELECT p.id, p.merchant_id, p.job_id, p.trace_parent, p.trace_state FROM payments p
             WHERE p.lifecycle = 'authorized' AND p.capture_deadline <= clock_timestamp()
               AND NOT EXISTS (SELECT 1 FROM payment_operations o WHERE o.merchant_id = p.merchant_id AND o.operation_id = 'expiry-' || p.id::text)
             ORDER BY p.capture_deadline LIMIT 100)
            """)
        let handed: [(stage: Stage, message: StageMessage)] = try rows.map { row in
            (stage: .operations, message: try PaymentStore.tracedMessage(row: row))
        }
        // Deferred payments whose credential expired end `failed` here, and go to notify.
        return try handed + expireDeferred(clock: BatchClock.read(connection), on: connection).map { (stage: .notify, message: $0) }
    }
}
