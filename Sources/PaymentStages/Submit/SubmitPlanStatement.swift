import Foundation
import Pipeline
import Postgres

/// The set-based SQL of the submit stage's planning transaction: two statements for the whole batch instead of
/// four or five per message (lock, merchant, request, attempt, transition); the second is the store's.
///
/// The rules of the per-message path hold: the `sending` attempt and `prepared → submitting` are written in the
/// planning transaction, which commits before any AUTH leaves; rows are locked in id order, so two workers cannot
/// deadlock on the same payments.
enum SubmitPlanStatement {
    /// A payment of the batch, locked, with its stored request when it is `prepared` (`nil`: none stored, already
    /// purged, or unreadable — the per-message path reports why).
    struct Candidate {
        let payment: PaymentRecord
        let request: GatewayRequest?
        /// The database clock when the batch was locked.
        let now: Date
        /// An attempt of the payment still `sending` or `uncertain` (the protocol never sends beside one).
        let openAttempt: Int64?
    }

    /// One AUTH about to be sent: its `sending` attempt.
    typealias Send = PaymentStore.SubmitSend

    /// Locks the batch's payments (`ORDER BY id FOR UPDATE OF payments`) and reads them with their stored requests
    /// in one statement.
    static func lock(_ ids: [UUID], requests: GatewayRequestStore, on connection: PostgresConnection) throws -> [UUID: Candidate] {
        var candidates: [UUID: Candidate] = [:]
        for row in try connection.query(lockStatement, [PostgresArray(ids)]) {
            let payment = try PaymentRecord(row: row)
            let request = payment.status == .prepared ? (try? requests.open(row, for: payment.id)) ?? nil : nil
            candidates[payment.id] = Candidate(
                payment: payment, request: request, now: try row.decode("db_now", as: Date.self),
                openAttempt: try row.decode("open_attempt", as: Int64?.self))
        }
        return candidates
    }

    /// Moves every payment of `sends` from `prepared` to `submitting` with its `sending` attempt and audit event
    /// (``PaymentStore/beginSubmitting(_:sendWindow:actor:on:)``); returns the attempt id of each payment it moved.
    static func begin(_ sends: [Send], sendWindow: Double, on connection: PostgresConnection) throws -> [UUID: Int64] {
        try PaymentStore().beginSubmitting(sends, sendWindow: sendWindow, actor: SubmitStage.actor, on: connection)
    }

    /// `PaymentRecord.columns` qualified with the `payments` alias `p` (the joined request has an `order_reference` too).
    private static let paymentColumns = PaymentRecord.columns.split(separator: ",")
        .map { "p." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", ")

    private static let lockStatement = """
        SELECT \(paymentColumns), \(GatewayRequestStore.columns("g")), clock_timestamp() AS db_now,
               (SELECT max(a.id) FROM gateway_attempts a WHERE a.payment_id = p.id AND a.state IN ('sending', 'uncertain')) AS open_attempt
        FROM payments p
        LEFT JOIN gateway_requests g ON g.payment_id = p.id AND g.purged_at IS NULL AND g.ciphertext IS NOT NULL
        WHERE p.id = ANY($1::uuid[])
        ORDER BY p.id
        FOR UPDATE OF p
        """
}
