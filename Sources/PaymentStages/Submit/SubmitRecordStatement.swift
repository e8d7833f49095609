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
        for ending in endings { try PaymentStateMachine.validate(from: .submitting, to: ending.decision.status) }
        let results = endings.map(\.result)
        let rows = try connection.query(statement, [
            PostgresArray(endings.map(\.paymentId)), PostgresArray(endings.map(\.attemptId)),
            PostgresArray(endings.map(\.decision.status.rawValue)), PostgresArray(endings.map(\.decision.status.stage.rawValue)),
            PostgresArray(endings.map(\.decision.errorCode)), PostgresArray(endings.map(\.decision.detail)),
            PostgresArray(results.map(\.recordedOutcome)), PostgresArray(results.map(\.errorCode)),
            PostgresArray(results.map(\.recordedErrorMessage)), PostgresArray(results.map(\.transactionReference)),
            PostgresArray(results.map(\.settleStatus)), PostgresArray(results.map(\.acquirerResponseCode)),
            PostgresArray(results.map(\.authCode)), PostgresArray(results.map(\.maskedPan)),
            PaymentStatus.submitting.rawValue, GatewayAttempt.State.completed.rawValue, SubmitStage.actor,
        ])
        var ended = [StageMessage?](repeating: nil, count: endings.count)
        if let first = rows.first, try first.decode("settled", as: Int64.self) != Int64(rows.count) {
            // Every payment ended must have had its current attempt completed in the same statement.
            throw GatewayAttemptStore.NotCurrent(attemptId: endings[0].attemptId)
        }
        for row in rows {
            ended[Int(try row.decode("n", as: Int64.self)) - 1] = StageMessage(
                paymentId: try row.decode("id", as: UUID.self), merchantId: try row.decode("merchant_id", as: String.self),
                jobId: try row.decode("job_id", as: String.self))
        }
        return ended
    }

    /// `error_message` only changes when there is an error code, as in ``PaymentStore/transition``; the attempt is
    /// completed only for payments the guarded update ended.
    private static let statement = """
        WITH input AS (
            SELECT * FROM unnest($1::uuid[], $2::int8[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                                 $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[])
                WITH ORDINALITY AS t(payment_id, attempt_id, to_status, to_stage, error_code, detail, outcome, attempt_error_code,
                                     attempt_error_message, transaction_reference, settle_status, acquirer_response_code, auth_code,
                                     masked_pan, n)),
        locked AS MATERIALIZED (
            SELECT p.id FROM payments p WHERE p.id = ANY($1::uuid[]) ORDER BY p.id FOR UPDATE),
        ended AS (
            UPDATE payments p SET status = i.to_status, stage = i.to_stage, updated_at = clock_timestamp(),
                   error_code = COALESCE(i.error_code, p.error_code),
                   error_message = COALESCE(CASE WHEN i.error_code IS NULL THEN NULL ELSE i.detail END, p.error_message)
            FROM input i JOIN locked l ON l.id = i.payment_id
            WHERE p.id = i.payment_id AND p.status = $15
              AND EXISTS (
                  SELECT 1 FROM gateway_attempts a
                  WHERE a.id = i.attempt_id AND a.payment_id = i.payment_id AND a.state IN ('sending', 'uncertain')
                    AND NOT EXISTS (SELECT 1 FROM gateway_attempts b
                                    WHERE b.payment_id = a.payment_id AND b.id > a.id AND b.request_type <> 'TRANSACTIONQUERY'))
            RETURNING p.id, p.merchant_id, p.job_id, i.n, i.to_status, i.to_stage, i.error_code, i.detail),
        attempts AS (
            UPDATE gateway_attempts a SET state = $16, outcome = i.outcome, error_code = i.attempt_error_code,
                   error_message = i.attempt_error_message, transaction_reference = i.transaction_reference,
                   settle_status = i.settle_status, acquirer_response_code = i.acquirer_response_code, auth_code = i.auth_code,
                   masked_pan = i.masked_pan, finished_at = clock_timestamp()
            FROM input i JOIN ended e ON e.id = i.payment_id
            WHERE a.id = i.attempt_id AND a.state IN ('sending', 'uncertain')
            RETURNING a.id),
        events AS (
            INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor, error_code, detail)
            SELECT id, $15, to_status, to_stage, $17, error_code, detail FROM ended ORDER BY n)
        SELECT id, merchant_id, job_id, n, (SELECT count(*) FROM attempts)::bigint AS settled FROM ended
        """
}
