import Foundation
import Pipeline
import Postgres

/// `paypipe-operations`' handler (``OperationsWorker/publisherScreened``): the operations stage for the operations'
/// batches, and beside it what is not an operation: deferred payments' completions (``DeferredCompletion``), the upkeep
/// round (``OperationsUpkeepRound``: suspensions, the settlement poll, merchant-token events) and the reconciler's
/// hand-offs (``reconcile(on:)``). The operations' decoding, batches and spans are the stage's, unchanged.
public struct OperationsWorker: ReconcilingStage {
    public let operations: OperationsStage
    /// `payment.complete.requested`, and the expiry of deferred payments in the reconciler's round.
    public let completion: DeferredCompletion
    /// The upkeep round the launch wires (nil: no upkeep).
    public let upkeepRound: OperationsUpkeepRound?

    public init(_ operations: OperationsStage, upkeepRound: OperationsUpkeepRound? = nil) {
        self.operations = operations
        self.upkeepRound = upkeepRound
        // One set of deferred series: the round sets the waiting gauge, the completions count what they committed.
        self.completion = DeferredCompletion(directory: operations.directory, metrics: upkeepRound?.deferredMetrics ?? DeferredMetrics())
    }

    public var stage: Stage { operations.stage }

    /// A delivery: an operation (or the reconciler's hand-off of a payment), or a deferred payment's amount.
    public enum Message: Sendable, Equatable {
        case operation(OperationsStage.Message)
        /// `payment.complete.requested` (``DeferredCompletion/complete(_:database:clock:)``).
        case completion(CompletionRequest)

        var merchantId: String {
            switch self {
            case .operation(let operation): operation.merchantId
            case .completion(let completion): completion.merchantId
            }
        }
    }

    public func decode(_ inbound: InboundMessage) throws(StageFailure) -> Message {
        guard inbound.jobRoutingKey == CompletionRequest.routingKey else { return .operation(try operations.decode(inbound)) }
        do {
            return .completion(try CompletionRequest.decode(inbound.body))
        } catch {
            // Nothing to record it against: an invalid completion is dead-lettered with its reason.
            throw .unattributable(code: error.code, reason: error.description)
        }
    }

    /// Completions first, in one transaction of their own: they touch payments before their AUTH, never an operation.
    /// Then the operations, in the stage's waves.
    public func process(_ batch: [Message], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        var results = [Result<StageOutcome, StageFailure>?](repeating: nil, count: batch.count)
        let completions = batch.indices.compactMap { index -> (Int, CompletionRequest)? in
            if case .completion(let request) = batch[index] { (index, request) } else { nil }
        }
        for ((index, _), result) in zip(completions, completion.complete(completions.map(\.1), database: database)) { results[index] = result }
        let operations = batch.indices.compactMap { index -> (Int, OperationsStage.Message)? in
            if case .operation(let message) = batch[index] { (index, message) } else { nil }
        }
        for ((index, _), result) in zip(operations, self.operations.process(operations.map(\.1), database: database)) { results[index] = result }
        return results.map { $0! }
    }

    public func spanAttributes(of message: Message) -> [SpanAttribute] {
        switch message {
        case .operation(let operation):
            return operations.spanAttributes(of: operation)
        case .completion(let completion):
            return [SpanAttribute("operationId", completion.operationId), SpanAttribute("merchantId", completion.merchantId),
                    SpanAttribute("paymentId", completion.paymentId.paymentIDText), SpanAttribute("kind", CompletionRequest.routingKey)]
        }
    }

    /// The worker's own series: deferred payments' (``DeferredMetrics``), then the upkeep round's (the merchant-token
    /// puller's).
    public func attach(metrics registry: MetricsRegistry) {
        completion.metrics.attach(metrics: registry)
        upkeepRound?.attach(metrics: registry)
    }

    /// The upkeep round, on the reconciler thread every `PAYPIPE_RECONCILE_INTERVAL`.
    public func upkeep(database: PostgresConnection, logger: Logger) throws {
        try upkeepRound?.upkeep(database: database, logger: logger)
    }

    /// Payments whose late AUTH is to be voided, or whose manual authorisation was not captured within
    /// `captureWithin`, each handed to the stage once per reconciler round (their void is idempotent: one operation
    /// per payment); and the deferred payments whose credential expired (``DeferredCompletion/expireDeferred(clock:on:)``),
    /// to notify. Runs on the reconciler thread every `PAYPIPE_RECONCILE_INTERVAL`.
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
        return try handed + completion.expireDeferred(clock: BatchClock.read(connection), on: connection).map { (stage: .notify, message: $0) }
    }
}
