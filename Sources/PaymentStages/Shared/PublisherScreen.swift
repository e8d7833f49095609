import Pipeline
import Postgres

/// Who may act for a merchant: a merchant document's `publishers` (``MerchantPublishers``) against the AMQP `user_id`
/// a job or operation was published with, which RabbitMQ checked against the publishing connection's user. Pure.
public enum PublisherRule {
    public static let code = "publisher_not_allowed"

    /// Nil when `publisher` may act for the merchant: it has no `publishers` (any publisher, the behaviour before the
    /// field), or lists `publisher`. Otherwise the message is dead-lettered unread (`unattributable`): it is not the
    /// merchant's, so nothing is recorded against the merchant nor sent to its gateway.
    public static func refusal(merchantId: String, publishers: [String]?, publisher: String?) -> StageFailure? {
        guard let publishers else { return nil }
        if let publisher, publishers.contains(publisher) { return nil }
        let who = publisher.map { "broker user \"\($0.prefix(64))\"" } ?? "a publisher that set no AMQP user_id"
        return .unattributable(code: code, reason: "merchant \(merchantId) accepts jobs only from its publishers; this one came from \(who)")
    }
}

/// The publisher check in front of a stage that takes jobs from backends (decrypt, operations): one shared piece, so
/// both apply ``PublisherRule`` the same way, before anything else — the wrapped stage never sees a refused message,
/// so it records, decrypts and sends nothing for it. Messages the workers themselves handed off (no job routing key,
/// through the stages exchange, e.g. the reconciler's) are not screened; a job's retry copies are, with the publisher
/// the runtime kept on them (``DeliveryRouter/Header/publisher``).
public struct PublisherScreen<Stage: StageHandler>: StageHandler {
    public struct Message: Sendable {
        public let message: Stage.Message
        /// The AMQP `user_id` it was published with.
        public let publisher: String?
        /// False for a hand-off between workers, which no backend published.
        public let screened: Bool
    }

    /// The wrapped stage (the reconciler component runs on it).
    public let stage: Stage
    private let directory: MerchantDirectory
    private let merchantId: @Sendable (Stage.Message) -> String?

    init(_ stage: Stage, directory: MerchantDirectory, merchantId: @escaping @Sendable (Stage.Message) -> String?) {
        self.stage = stage
        self.directory = directory
        self.merchantId = merchantId
    }

    public var stageName: StageName { stage.stageName }

    public func decode(_ inbound: InboundMessage) throws(StageFailure) -> Message {
        Message(message: try stage.decode(inbound), publisher: inbound.publisher,
                screened: !(inbound.isFromWorkers && inbound.jobRoutingKey == nil))
    }

    /// The merchants of the screened messages (one cached lookup each), the refusals, then the wrapped stage's
    /// `process` on what is left. An unknown or unloadable merchant is the stage's to judge, as before.
    public func process(_ batch: [Message], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        let merchants = batch.map { $0.screened ? merchantId($0.message) : nil }
        let lookups: [String: MerchantLookup<MerchantDirectory.Entry>]
        do {
            lookups = try directory.lookups(merchants.compactMap { $0 }, on: database)
        } catch {
            return batch.map { _ in .failure(FailureClassifier.classify(error)) }
        }
        var results: [Result<StageOutcome, StageFailure>?] = zip(batch, merchants).map { item, merchant in
            guard let merchant, case .found(let entry)? = lookups[merchant] else { return nil }
            return PublisherRule.refusal(merchantId: merchant, publishers: entry.merchant.config.publishers, publisher: item.publisher)
                .map { .failure($0) }
        }
        let admitted = batch.indices.filter { results[$0] == nil }
        if !admitted.isEmpty {
            for (index, result) in zip(admitted, stage.process(admitted.map { batch[$0].message }, database: database)) {
                results[index] = result
            }
        }
        return results.map { $0! }
    }

    public func spanAttributes(of message: Message) -> [SpanAttribute] { stage.spanAttributes(of: message.message) }

    public func attach(metrics registry: MetricsRegistry) {
        stage.attach(metrics: registry)
    }

    public func upkeep(database: PostgresConnection, logger: Logger) throws {
        try stage.upkeep(database: database, logger: logger)
    }
}
