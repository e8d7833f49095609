import Foundation
import Pipeline
import Postgres

/// Phase 3 of a round: the answers to sends and the status queries of lost answers applied together, set-based
/// (``OperationSteps/settle(_:queries:actor:clock:on:)``: the round's payments locked and its rows read once, each
/// answer and query decided purely, one write per table through ``OperationStore`` and ``PaymentStore``); a finished
/// operation handed to notify.
extension OperationsStage {
    /// Records each answer; an update the status query shows not applied goes another round (its plan then sends a
    /// new attempt).
    public func record(_ answers: [Answered<Message, Call, Answer>], observed: Void, transaction: PostgresConnection) throws -> [Recorded] {
        var sends: [(index: Int, answering: OperationSteps.Answering, clock: BatchClock)] = []
        var queries: [(index: Int, querying: OperationSteps.Querying)] = []
        for (index, answered) in answers.enumerated() {
            switch (answered.call, answered.answer) {
            case (.send(let planned, _), .sent(let answer)):
                sends.append((index, .init(operation: planned.operation, attempt: planned.attempt, answer: answer, transport: planned.transport), planned.clock))
            case (.query(let planned, _), .queried(let evidence)):
                queries.append((index, .init(operation: planned.operation, query: planned.attempt, evidence: evidence)))
            case (.send, .queried), (.query, .sent):
                preconditionFailure("an answer of another kind of call")
            }
        }
        // One clock per round: every call of it was planned in the same prepare.
        let round = try steps.settle(sends.map(\.answering), queries: queries.map(\.querying), actor: Self.actor, clock: sends.first?.clock,
                                     on: transaction)
        var results = [Recorded?](repeating: nil, count: answers.count)
        let payment = { (operation: OperationStore.Operation) in operation.paymentId.flatMap { round.payments[$0] } }
        for (send, settled) in zip(sends, round.settled) {
            results[send.index] = try recorded(settled, payment: payment(send.answering.operation), transaction: transaction)
        }
        for (query, settled) in zip(queries, round.reconciled) {
            results[query.index] = try recorded(settled, payment: payment(query.querying.operation), transaction: transaction)
        }
        return results.map { $0! }
    }

    func recorded(_ settled: OperationSteps.Settled, payment: PaymentRecord? = nil, transaction: PostgresConnection) throws -> Recorded {
        switch settled {
        case .finished(let operation): .finished(try report(operation, payment: payment, transaction: transaction))
        case .review(let operation): .finished(reviewed(operation))
        case .retry(let code, _, _) where code == "operation_not_applied": .again
        case .retry(let code, let reason, let until): .failed(Self.retried(code: code, reason: reason, until: until))
        }
    }

    /// A message to retry: at `until` when its time is known, else on the retry tiers.
    static func retried(code: String, reason: String, until: Date?) -> StageFailure {
        until.map { .waiting(code: code, reason: reason, until: $0) } ?? .transient(code: code, reason: reason)
    }

    static let unsettled = StageFailure.transient(code: "operation_not_applied", reason: "the update was not applied after several attempts")

    public func unsettled(_ message: Message) -> StageFailure { Self.unsettled }

    /// A finished operation goes to notification, which sends its event. `payment`: its row as already read in this
    /// transaction, if it was (its status and ids are what the report needs; an operation changes neither).
    func report(_ operation: OperationStore.Operation, payment read: PaymentRecord? = nil, transaction: PostgresConnection) throws -> StageOutcome {
        guard let paymentId = operation.paymentId, let payment = try read ?? PaymentStore().load(paymentId, on: transaction) else {
            return .completed
        }
        var messages: [OutboundMessage] = [.handOff(HandOffMessage(OperationEventMessage(payment: payment.message, operationRowId: operation.id)))]
        if operation.requestedBy == .lateAuthorization, operation.state == .succeeded {
            // The customer is not charged for a payment reported failed: the review closes as failed, notified again.
            let closed = try PaymentStore().transition(
                paymentId, from: .needsReview, to: .failed, actor: Self.actor, errorCode: "late_authorization_voided",
                detail: "the late AUTH was voided automatically (operation \(operation.operationId))", on: transaction)
            if closed == .applied || payment.status == .failed {
                messages.append(.handOff(to: .notify, payment.message))
            }
        }
        return .publish(messages)
    }

    /// An operation for review sends nothing: an operator resolves it (its payment takes no other operation meanwhile).
    /// Its message, and any repeat of it, ends in a log line naming the operation.
    func reviewed(_ operation: OperationStore.Operation) -> StageOutcome {
        .settled(note: "under_review", reason: "operation \(operation.operationId) waits for review; nothing was sent")
    }
}
