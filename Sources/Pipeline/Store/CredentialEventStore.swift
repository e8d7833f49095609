import Crypto
import Foundation
import JSON
import Postgres

/// What a merchant is told about one of its stored credentials, as webhook and results events.
public enum CredentialEventType: String, Sendable, Hashable, CaseIterable {
    /// The credential left `active` for `unlinked` (Apple's UNLINK, or `paypipe credential unlink`): later MITs fail
    /// `credential_unlinked`.
    case unlinked = "credential.unlinked"
    /// Its card metadata changed (Apple's UPDATED_METADATA / UPDATED_CARD_ART): last four digits, expiry, card art.
    case updated = "credential.updated"
}

/// SQL for `credential_events` (migration 18), its only writer: the outbox of credential events. ``CredentialStore``
/// records one with each change it reports, in the change's transaction; the notify worker hands the un-notified
/// ones to its stage and settles them.
public struct CredentialEventStore: Sendable {
    public init() {}

    /// One recorded event, as notify reads it.
    public struct Event: Sendable, Equatable {
        public let rowId: Int64
        public let eventId: String
        public let type: CredentialEventType
        public let credentialId: String
        public let merchantId: String
        /// The payment that stored the credential.
        public let paymentId: UUID
        /// The credential's public fields as the change left them (``CredentialStore/publicFields(_:)``).
        public let credential: JSONValue
        public let reason: String?
        public let occurredAt: Date
        public let notified: Bool
    }

    /// Records the event of a change just made to a credential, in the caller's transaction (``CredentialStore``
    /// calls it with the change). `credential`: its public fields after the change, never a secret. The event's id is
    /// chosen here, once: redeliveries of the event carry the same `webhook-id`.
    public func record(_ type: CredentialEventType, credentialId: String, merchantId: String, paymentId: UUID, credential: JSONValue,
                       reason: String?, on connection: PostgresConnection) throws {
        let snapshot = PostgresJSONB(String(decoding: credential.serialized(), as: UTF8.self))
        try connection.query(
            """
            INSERT INTO credential_events (event_id, type, credential_id, merchant_id, payment_id, credential, reason)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """, ["evt_" + Hex.encode(SecureRandom.bytes(count: 16)), type.rawValue, credentialId, merchantId, paymentId, snapshot, reason])
    }

    /// A hand-off to give notify: the event's row and what a stage message names.
    public struct HandOff: Sendable, Equatable {
        public let rowId: Int64
        public let merchantId: String
        public let paymentId: UUID
        public let jobId: String

        public init(rowId: Int64, merchantId: String, paymentId: UUID, jobId: String) {
            (self.rowId, self.merchantId, self.paymentId, self.jobId) = (rowId, merchantId, paymentId, jobId)
        }
    }

    /// Takes the un-notified events not handed off within `stuckAfter` seconds (never handed, or a hand-off that was
    /// lost or held), oldest first, stamping `handed_at` in one statement (`SKIP LOCKED`: two notify workers never
    /// take the same row in one round).
    public func claimForHandOff(stuckAfter: Double, limit: Int = 500, on connection: PostgresConnection) throws -> [HandOff] {
        try connection.query(
            """
            UPDATE credential_events e SET handed_at = clock_timestamp() FROM payments p
            WHERE p.id = e.payment_id AND e.id IN (
                SELECT id FROM credential_events WHERE notified_at IS NULL
                  AND (handed_at IS NULL OR handed_at < clock_timestamp() - make_interval(secs => $1))
                ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
            RETURNING e.id, e.merchant_id, e.payment_id, p.job_id
            """, [stuckAfter, limit]
        ).map { row in
            HandOff(rowId: try row.decode("id"), merchantId: try row.decode("merchant_id"), paymentId: try row.decode("payment_id"),
                    jobId: try row.decode("job_id"))
        }.sorted { $0.rowId < $1.rowId }
    }

    public func load(_ rowId: Int64, on connection: PostgresConnection) throws -> Event? {
        try connection.query(
            """
            SELECT id, event_id, type, credential_id, merchant_id, payment_id, credential::text AS credential, reason, occurred_at,
                   notified_at IS NOT NULL AS notified
            FROM credential_events WHERE id = $1
            """, [rowId]
        ).first.map { row in
            Event(
                rowId: try row.decode("id"), eventId: try row.decode("event_id"), type: try row.decodeChoice("type", as: CredentialEventType.self),
                credentialId: try row.decode("credential_id"), merchantId: try row.decode("merchant_id"), paymentId: try row.decode("payment_id"),
                credential: (try? JSONValue.parse(Array(try row.decode("credential", as: String.self).utf8))) ?? .object([]),
                reason: try row.decode("reason"), occurredAt: try row.decode("occurred_at"), notified: try row.decode("notified"))
        }
    }

    /// Settles the event's webhook once.
    public func markNotified(_ rowId: Int64, on connection: PostgresConnection) throws {
        try connection.query("UPDATE credential_events SET notified_at = clock_timestamp() WHERE id = $1 AND notified_at IS NULL", [rowId])
    }

    /// Every event of a credential, oldest first (the CLI's and the tests' view).
    public func events(credentialId: String, on connection: PostgresConnection) throws -> [Event] {
        try connection.query("SELECT id FROM credential_events WHERE credential_id = $1 ORDER BY id", [credentialId])
            .compactMap { try load(try $0.decode("id"), on: connection) }
    }
}
