import Pipeline
import Postgres

extension DecryptStage {
    /// `paypipe_tokens_decrypted_total`, `paypipe_certificate_not_after_seconds` and `paypipe_data_key_seals_total`.
    public func attach(metrics registry: MetricsRegistry) {
        cardData.vault.attach(metrics: registry)
        keyUsage.attach(metrics: registry)
        tokenTypes.attach(metrics: registry)
        certificateWatch.attach(metrics: registry)
    }

    /// At start and every reconcile interval: the certificate check, then the key-usage counts to `merchant_key_usage`
    /// (kept in memory for the next round if that fails, e.g. before `paypipe migrate` created the table).
    public func upkeep(database: PostgresConnection, logger: Logger) throws {
        try certificateWatch.check(on: database, logger: logger)
        try keyUsage.flush(on: database)
    }
}
