extension PayPipeSchema {
    /// Migration 14: deferred payments (a job with `amountPending`, docs/job-contract.md "Deferred payments (amount set later)").
    /// - the `awaiting_amount` status (the CHECK's list is frozen here: a later status adds a migration of its own);
    /// - `amount_completed_at`: when a `payment.complete.requested` operation set the amount. Authorize builds a
    ///   deferred payment's request only once it is set, so a completed payment never waits a second time;
    /// - a partial index for the expiry sweep (``PaymentStore/awaitingAmount(limit:on:)``).
    static let deferredAmount = """
    ALTER TABLE payments DROP CONSTRAINT payments_status_check;
    ALTER TABLE payments ADD CONSTRAINT payments_status_check CHECK (status IN
        ('received','decrypted','awaiting_amount','prepared','submitting','authorized','declined','failed','needs_review'));
    ALTER TABLE payments ADD COLUMN amount_completed_at timestamptz;
    CREATE INDEX payments_awaiting_amount ON payments (first_received_at) WHERE status = 'awaiting_amount';
    """
}
