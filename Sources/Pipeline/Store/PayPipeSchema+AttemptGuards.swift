extension PayPipeSchema {
    /// Migration 5: what an AUTH attempt needs to be reconciled on its own terms.
    ///
    /// - `send_deadline`: the attempt's request bytes never leave after it (the worker's send gate refuses), so the
    ///   AUTH can no longer reach the gateway after `send_deadline + total timeout`;
    /// - `reconcile_after`: when the attempt may be queried, on the database clock (`send_deadline`, plus the total
    ///   timeout and the margin of the worker that started it);
    /// - `site_reference`: the site the AUTH went to, which the status query must ask (not today's configuration);
    /// - `order_reference` already holds the reference sent (now unique per payment);
    /// - `late_*`: an answer that came for an attempt that was no longer current (stale, or after the payment left
    ///   `submitting`), kept as evidence without moving the payment.
    /// Rows written before this migration have NULLs; the stage then falls back to the old rule.
    static let attemptGuards = """
    ALTER TABLE gateway_attempts
        ADD COLUMN send_deadline timestamptz,
        ADD COLUMN reconcile_after timestamptz,
        ADD COLUMN site_reference text,
        ADD COLUMN late_outcome text,
        ADD COLUMN late_error_code text,
        ADD COLUMN late_transaction_reference text,
        ADD COLUMN late_settle_status text,
        ADD COLUMN late_answered_at timestamptz;
    """
}
