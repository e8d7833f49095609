extension PayPipeSchema {
    /// Migration 15: each payment keeps the W3C trace context of its job's handling by decrypt (`traceparent` and, when
    /// the publisher sent one, `tracestate`), so a hand-off built from the row outside any delivery — the reconciler's
    /// re-drive, `paypipe reconcile`, `paypipe payment resolve`, operations' hand-offs, a deferred completion — continues
    /// the job's trace instead of starting a new one (docs/observability.md). Nullable without a default: adding them
    /// rewrites nothing, and a payment created before has none (its re-drive starts a new trace, as before).
    static let traceContext = """
    ALTER TABLE payments ADD COLUMN trace_parent text, ADD COLUMN trace_state text;
    """
}
