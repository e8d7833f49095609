import Foundation
import Pipeline
import Postgres

/// The set-based SQL of the submit stage's recording transaction for answers that end the payment: one statement
/// for the batch instead of four per message (lock, attempt, transition, purge).
///
/// No explicit purge: the `payments_terminal_purge` trigger shreds card data and the stored request in the same
/// statement that makes the payment terminal.
enum SubmitRecordStatement {
    /// One final answer to record, with what it means for the payment.
    struct Ending {
        let paymentId: UUID
        let attemptId: Int64
        let result: GatewayResult
        let decision: TerminalDecision
    }

    /// Ends every payment of `endings` still `submitting` whose attempt is its current one (latest AUTH attempt, still
    /// `sending` or `uncertain`: the protocol's guard, in SQL; guarded, locked in id order), completes its attempt with
    /// the columns ``GatewayAttemptStore/finish(_:state:result:on:)`` writes, and records the audit events; returns,
    /// per ending, the hand-off of the payment if it was ended (`nil`: not `submitting`, left to the caller).
    static func finish(_ endings: [Ending], on connection: PostgresConnection) throws -> [StageMessage?] {
        let transitions = try CheckedTransition.checkEach(endings.map { (from: PaymentStatus.submitting, to: $0.decision.status) })
        let ended = try PaymentStore().endSubmitting(
            zip(endings, transitions).map { ending, transition in
                let result = ending.result
                return PaymentStore.SubmitEnding(
                    paymentId: ending.paymentId, attemptId: ending.attemptId, transition: transition,
                    errorCode: ending.decision.errorCode, detail: ending.decision.detail,
                    answer: PaymentStore.AttemptAnswer(
                        outcome: result.recordedOutcome, errorCode: result.errorCode, errorMessage: result.recordedErrorMessage,
                        transactionReference: result.transactionReference, settleStatus: result.settleStatus,
                        acquirerResponseCode: result.acquirerResponseCode, authCode: result.authCode, maskedPan: result.maskedPan,
                        settleDueDate: result.settleDueDate))
            },
            attemptState: GatewayAttempt.State.completed.rawValue, actor: SubmitStage.actor, on: connection)
        // Every payment ended must have had its current attempt completed in the same statement.
        guard ended.allAttemptsCompleted else { throw GatewayAttemptStore.NotCurrent(attemptId: endings[0].attemptId) }
        return ended.messages
    }
}
