extension PayPipeSchema {
    /// Migration 3: fewer index entries per payment update.
    ///
    /// Every stage changes `status`, `stage` and `updated_at`, so no update of `payments` can be HOT and each one adds
    /// an entry to every index of the table — about seven row versions per payment. `payments_status` (all rows, by
    /// status) served no query of the pipeline, and counts by status scan the table anyway, so it only cost write
    /// work. What an operator does look up by status — payments waiting for a person (`needs_review`) — gets a
    /// partial index, which an update only writes to when the new row is in that status.
    static let leanIndexes = """
    DROP INDEX IF EXISTS payments_status;
    CREATE INDEX payments_needs_review ON payments (updated_at) WHERE status = 'needs_review';
    """
}
