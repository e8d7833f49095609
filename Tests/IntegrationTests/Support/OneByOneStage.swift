import AMQP
import Pipeline
import Postgres

/// A transactional stage with its set-based fast path hidden: every message goes through `handle` one by one, as
/// before ``TransactionalStageHandler/handleInBulk(_:transaction:)`` existed. The reference the bulk path is
/// compared with.
struct OneByOneStage<Base: TransactionalStageHandler>: TransactionalStageHandler {
    let base: Base

    var stage: Stage { base.stage }

    func decode(_ delivery: AMQPDelivery) throws(StageFailure) -> Base.Message {
        try base.decode(delivery)
    }

    func handle(_ message: Base.Message, transaction: PostgresConnection) throws -> StageOutcome {
        try base.handle(message, transaction: transaction)
    }
}
