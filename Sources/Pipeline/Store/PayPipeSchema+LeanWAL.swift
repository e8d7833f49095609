extension PayPipeSchema {
    /// Migration 11: less WAL per payment, with the same rows, facts and durability (docs/performance.md, "Cost
    /// budget"; the measurements in bench/results/cost-history.md).
    ///
    /// - Two indexes no query reads: `gateway_attempts_sending` (attempts are always looked up by id or payment, and
    ///   the submit reconciler finds open attempts through `payments`) and `webhook_deliveries_event` (deliveries are
    ///   listed by payment or by id). Each cost an index entry per attempt or delivery, and the first, because its
    ///   predicate names `state`, also made every attempt's `sending → completed` update a non-HOT one.
    /// - A `fillfactor` on the tables whose rows are updated after their insert without touching an indexed column:
    ///   the card data and gateway request purge (ciphertext and nonce nulled: the new version is a fifth of the old,
    ///   80 and 75 leave room for it), the attempt's outcome (the new version is about 1.7 times the `sending` one,
    ///   and a batch updates every attempt of its pages in one transaction, before any pruning: 35). With room on the
    ///   page the new version stays there as a HOT update: no index entry, and PostgreSQL logs only the changed bytes.
    ///   `payments` gets 50, room for one more version of each row, which pruning frees again before the next stage:
    ///   its stage updates cannot be HOT (the reconciler's `payments_stage_updated` index names `stage`), but a new
    ///   version on the same page is still logged as its changed bytes only. The table takes about twice the pages.
    /// A storage parameter applies to pages filled from now on; existing pages keep their rows.
    static let leanWAL = """
    DROP INDEX IF EXISTS gateway_attempts_sending;
    DROP INDEX IF EXISTS webhook_deliveries_event;
    ALTER TABLE payments SET (fillfactor = 50);
    ALTER TABLE card_data SET (fillfactor = 80);
    ALTER TABLE gateway_requests SET (fillfactor = 75);
    ALTER TABLE gateway_attempts SET (fillfactor = 35);
    """
}
