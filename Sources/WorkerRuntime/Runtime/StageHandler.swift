import Postgres
// The failure dispositions a handler returns (StageFailure), a module shared with the payment domain, which decides in them.
@_exported import StageContract

/// A stage's domain logic, free of queue mechanics.
///
/// The runtime owns consuming, batching, transactions, hand-off publishing, acking, retries and dead-lettering; a
/// handler turns a batch of decoded messages into database changes and one outcome each. The payments' reconciler is
/// a stage-side component (``StageRuntime``'s `components`).
public protocol StageHandler: Sendable, StageHandlerUpkeep {
    associatedtype Message: Sendable

    /// The stage this handler serves: decides the queue consumed and the labels of logs and metrics.
    var stageName: StageName { get }

    /// Pure decoding of a delivered message. Throwing `.unattributable` dead-letters the message unread.
    func decode(_ message: InboundMessage) throws(StageFailure) -> Message

    /// Handles a batch of decoded messages and returns one result per message, in order. Provided by the runtime's
    /// batch shapes (``TransactionalStageHandler``, ``CallingStageHandler``).
    ///
    /// Implementations must be idempotent: a message redelivered after a crash must find its effect
    /// already applied and return the same hand-off again (so the runtime re-publishes it).
    func process(_ batch: [Message], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>]

    /// What the span of a message's handling is about (e.g. `paypipe.payment_id`, `paypipe.job_id`), and the fields of
    /// its `message_handled` log line: the runtime knows no payments, so the stage names them. Default: none.
    func spanAttributes(of message: Message) -> [SpanAttribute]
}

extension StageHandler {
    public func spanAttributes(of message: Message) -> [SpanAttribute] { [] }
}

/// A stage whose whole effect is a database change: decrypt and authorize, the runtime's batch shape
/// (``CallingStageHandler``) with an empty call-out phase.
///
/// The runtime-provided ``process(_:database:)`` runs ``handle(_:transaction:)`` on the whole batch in **one**
/// transaction (``BatchTransaction/settle(_:on:_:)``); if it throws, the same `handle` runs again on halves of the
/// batch, each in a savepoint, down to single messages, so one bad message rolls back only its own work. `handle` may
/// therefore run more than once for a message (earlier runs rolled back): keep it to database work.
public protocol TransactionalStageHandler: StageHandler {
    /// The batch's one path, inside the batch transaction: one read of everything the stage decides on, a pure decide,
    /// a set-based apply. Returns one result per message, in order: a message's decided failure (a dead letter, a
    /// retry) is a result, not a throw. Throw (any error, which ``FailureClassifier`` classifies) only when the batch's
    /// statements fail: the runtime then narrows the failure down by halving.
    func handle(_ batch: [Message], transaction: PostgresConnection) throws -> [Result<StageOutcome, StageFailure>]
}

extension TransactionalStageHandler {
    public func process(_ batch: [Message], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        // A failure is the smallest part of the batch that failed (a single message), or the transaction itself
        // (commit, connection): nothing of it was applied.
        BatchTransaction.settle(batch, on: database) { try self.handle($0, transaction: $1) }.map { $0.flatMap { $0 } }
    }
}
