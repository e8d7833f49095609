import Pipeline
import Postgres

/// `paypipe-decrypt`'s handler (``DecryptStage/publisherScreened``): the decrypt stage for the batches, and beside it
/// what the worker's upkeep rounds run off the payment path: the certificate-expiry watch (``CertificateWatch``) and
/// the flush of the stage's key-usage counts (``KeyUsageCounter``).
/// Batches, decoding and spans are the stage's, unchanged.
public struct DecryptWorker: ReconcilingStage {
    public let decrypt: DecryptStage
    let certificateWatch = CertificateWatch()

    public init(_ decrypt: DecryptStage) {
        self.decrypt = decrypt
    }

    public var stage: Stage { decrypt.stage }

    public func decode(_ message: InboundMessage) throws(StageFailure) -> DecryptInput {
        try decrypt.decode(message)
    }

    public func process(_ batch: [DecryptInput], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        decrypt.process(batch, database: database)
    }

    public func spanAttributes(of input: DecryptInput) -> [SpanAttribute] { decrypt.spanAttributes(of: input) }

    /// The stage's series, then `paypipe_certificate_not_after_seconds`.
    public func attach(metrics registry: MetricsRegistry) {
        decrypt.attach(metrics: registry)
        certificateWatch.attach(metrics: registry)
    }

    /// At start and every reconcile interval: the certificate check, then the key-usage counts the stage took to
    /// `merchant_key_usage` (kept in memory for the next round if that fails, e.g. before `paypipe migrate` created
    /// the table).
    public func upkeep(database: PostgresConnection, logger: Logger) throws {
        try certificateWatch.check(on: database, logger: logger)
        try decrypt.keyUsage.flush(on: database)
    }
}
