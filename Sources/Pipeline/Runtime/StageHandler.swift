import AMQP
import Postgres

/// A stage's domain logic, free of queue mechanics.
///
/// The runtime owns consuming, batching, transactions, hand-off publishing, acking, retries and
/// dead-lettering; a handler only turns one decoded message into a database change and an outcome.
public protocol StageHandler: Sendable, StageHandlerUpkeep {
    associatedtype Message: Sendable

    /// The stage this handler serves: decides the queue consumed and the labels of logs and metrics.
    var stage: Stage { get }

    /// Pure decoding of a delivery. Throwing `.unattributable` dead-letters the message unread.
    func decode(_ delivery: AMQPDelivery) throws(StageFailure) -> Message

    /// Handles a batch of decoded messages and returns one result per message, in order.
    ///
    /// Implementations must be idempotent: a message redelivered after a crash must find its effect
    /// already applied and return the same hand-off again (so the runtime re-publishes it).
    func process(_ batch: [Message], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>]

    /// The stage's own part of each reconciler round, after stuck payments are re-driven: e.g. submit fails payments
    /// that waited past their deadline before any AUTH. Returns the hand-offs to publish; the default does nothing.
    func reconcile(on connection: PostgresConnection) throws -> [(stage: Stage, message: StageMessage)]
}

extension StageHandler {
    public func reconcile(on connection: PostgresConnection) throws -> [(stage: Stage, message: StageMessage)] { [] }
}

/// A stage whose whole effect is a database change (no network call-out).
///
/// The runtime-provided ``process(_:database:)`` handles the batch in **one** transaction (``BatchTransaction``):
/// without savepoints while every message succeeds, else again with a savepoint per message, so one bad message
/// rolls back only its own work; the batch costs a single commit (fsync). `handle` may therefore run twice for a
/// message (the first run rolled back): keep it to database work.
/// Stages that call out (gateway, webhooks) implement `process` themselves, because a transaction must never
/// be held open across network I/O.
public protocol TransactionalStageHandler: StageHandler {
    /// Does the message's work inside the batch transaction. Throw ``StageFailure`` (or any error, which
    /// ``FailureClassifier`` classifies) to roll back this message's savepoint.
    func handle(_ message: Message, transaction: PostgresConnection) throws -> StageOutcome

    /// The set-based fast path: does the common case of the whole batch in a few statements, inside the batch
    /// transaction, and returns an outcome for each message it settled and `nil` for each message it leaves to
    /// ``handle(_:transaction:)`` (duplicates, redeliveries, failures: whatever needs the one-by-one logic). Those run
    /// afterwards in the same transaction. Throwing abandons the first pass: every message then runs through `handle`
    /// in its own savepoint. The outcomes must be exactly those `handle` would give; the default settles nothing.
    func handleInBulk(_ messages: [Message], transaction: PostgresConnection) throws -> [StageOutcome?]
}

extension TransactionalStageHandler {
    public func handleInBulk(_ messages: [Message], transaction: PostgresConnection) throws -> [StageOutcome?] {
        Array(repeating: nil, count: messages.count)
    }

    public func process(_ batch: [Message], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        // ``BatchTransaction``: the whole batch without savepoints first; only if a message throws, again with a
        // savepoint per message (``outcome(of:in:_:)``).
        BatchTransaction.run(
            batch, on: database,
            bulk: { messages, transaction in
                try self.handleInBulk(messages, transaction: transaction).map { outcome in
                    try outcome.map { .success(try Self.recordingFailure($0, in: transaction)) }
                }
            },
            fastPath: { message, transaction in
                .success(try Self.recordingFailure(try self.handle(message, transaction: transaction), in: transaction))
            },
            isolated: { message, transaction in
                Self.outcome(of: message, in: transaction) { try self.handle(message, transaction: $0) }
            },
            failed: { _, error, transaction in Self.outcome(ofFailure: error, in: transaction) }
        ).map { result in
            switch result {
            case .success(let outcome): outcome
            // The transaction itself failed (commit, connection): nothing of the batch was applied.
            case .failure(let error): .failure(FailureClassifier.classify(error))
            }
        }
    }

    /// A `.failed` outcome of the first pass, recorded against its payment and turned into the hand-off to notification.
    private static func recordingFailure(_ outcome: StageOutcome, in transaction: PostgresConnection) throws -> StageOutcome {
        guard case .failed(let failure) = outcome else { return outcome }
        return .handOff(to: .notify, try PaymentStore().recordFailure(failure, on: transaction))
    }
}

extension StageHandler {
    /// Runs one message's work in its own savepoint of an open transaction.
    ///
    /// A permanent failure — returned as `.failed` or thrown as `StageFailure.permanent` — is recorded against
    /// its payment in a fresh savepoint of the same transaction (so one commit covers it) and becomes a
    /// hand-off to notification: failures are notified like any terminal result.
    public static func outcome(
        of message: Message, in transaction: PostgresConnection,
        _ body: (PostgresConnection) throws -> StageOutcome
    ) -> Result<StageOutcome, StageFailure> {
        let failure: PaymentFailure
        do {
            let outcome = try transaction.savepoint(body)
            guard case .failed(let permanent) = outcome else { return .success(outcome) }
            failure = permanent
        } catch {
            return outcome(ofFailure: error, in: transaction)
        }
        return recorded(failure, in: transaction)
    }

    /// What a message's thrown error leads to: a permanent failure is recorded against its payment (in a savepoint
    /// of the open transaction) and handed to notification; anything else goes back to the runtime.
    public static func outcome(ofFailure error: any Error, in transaction: PostgresConnection) -> Result<StageOutcome, StageFailure> {
        let classified = FailureClassifier.classify(error)
        guard case .permanent(let permanent) = classified else { return .failure(classified) }
        return recorded(permanent, in: transaction)
    }

    private static func recorded(_ failure: PaymentFailure, in transaction: PostgresConnection) -> Result<StageOutcome, StageFailure> {
        do {
            let handOff = try transaction.savepoint { try PaymentStore().recordFailure(failure, on: $0) }
            return .success(.handOff(to: .notify, handOff))
        } catch {
            return .failure(FailureClassifier.classify(error))
        }
    }
}
