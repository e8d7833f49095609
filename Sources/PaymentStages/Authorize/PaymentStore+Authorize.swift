import Foundation
import Pipeline
import Postgres

/// The authorize stage's part of ``Pipeline/PaymentStore``'s set-based statements, kept with the stage that runs it
/// (`decrypted → prepared` with the built request). `PaymentStore` stays the one writer of `payments` and `payment_events`.
extension PaymentStore {
    /// A built gateway request to store for a payment that advances `decrypted → prepared`, sealed for it (AAD =
    /// payment id).
    public struct PreparedRequest: Sendable {
        public let paymentId: UUID
        public let orderReference: String
        /// Validated tokens (the connector's request types, letters only), so a comma list per row is a safe array transport.
        public let requestTypes: [String]
        public let sealed: DataVault.SealedBox

        public init(paymentId: UUID, orderReference: String, requestTypes: [String], sealed: DataVault.SealedBox) {
            (self.paymentId, self.orderReference, self.requestTypes, self.sealed) = (paymentId, orderReference, requestTypes, sealed)
        }
    }

    /// Advances the payments still `decrypted` to `prepared`, stores their requests and writes one audit event each —
    /// the row ``transition(_:from:to:actor:errorCode:detail:on:)`` writes — for the payments actually updated, whose
    /// ids it returns. The request insert keeps `ON CONFLICT (payment_id) DO NOTHING`: a stored request is never
    /// replaced.
    public func prepare(_ rows: [PreparedRequest], actor: String, on transaction: PostgresConnection) throws -> Set<UUID> {
        guard !rows.isEmpty else { return [] }
        let prepared = try CheckedTransition(from: .decrypted, to: .prepared)
        let updated = try transaction.query(
            """
            WITH input AS (
                SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::bytea[])
                    WITH ORDINALITY AS t(id, order_reference, request_types, key_id, nonce, ciphertext, n)),
            updated AS (
                UPDATE payments p SET status = $8::text, stage = $9::text, updated_at = clock_timestamp()
                FROM input WHERE p.id = input.id AND p.status = $7::text
                RETURNING p.id),
            request AS (
                INSERT INTO gateway_requests (payment_id, order_reference, request_types, key_id, nonce, ciphertext)
                SELECT input.id, input.order_reference, string_to_array(input.request_types, ','), input.key_id, input.nonce,
                       input.ciphertext
                FROM input JOIN updated USING (id)
                ON CONFLICT (payment_id) DO NOTHING),
            event AS (
                INSERT INTO payment_events (payment_id, from_status, to_status, stage, actor)
                SELECT input.id, $7::text, $8::text, $9::text, $10::text
                FROM input JOIN updated USING (id)
                ORDER BY input.n)
            SELECT id FROM updated
            """,
            [
                PostgresArray(rows.map(\.paymentId)), PostgresArray(rows.map(\.orderReference)),
                PostgresArray(rows.map { $0.requestTypes.joined(separator: ",") }), PostgresArray(rows.map(\.sealed.keyId)),
                PostgresArray(rows.map(\.sealed.nonce)), PostgresArray(rows.map(\.sealed.ciphertext)),
                prepared.from?.rawValue, prepared.to.rawValue, prepared.stage.rawValue, actor,
            ])
        return Set(try updated.map { try $0.decode("id", as: UUID.self) })
    }
}
