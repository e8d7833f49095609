import Foundation
import JSON
import Postgres

/// A stored credential leaving `active` (unlinked by Apple's merchant-token events or `paypipe credential unlink`,
/// expired) or taking new card metadata, each change with its credential event (``CredentialEventStore``) in the same
/// transaction. `CredentialStore` stays the one writer of `credentials`; a payment's path (submit storing a CIT's
/// credential, authorize opening an MIT's) never changes a credential's state, so these live apart from it.
extension CredentialStore {
    /// What ``markUnlinked(_:merchantId:reason:on:)`` and ``expire(_:merchantId:reason:on:)`` did.
    public enum StateChange: Sendable, Equatable {
        /// This call moved it out of `active` (and shredded its secrets): the one caller that tells the merchant.
        case changed(Credential)
        /// It had already left `active` (a repeated event or command): nothing changed.
        case unchanged(Credential)
        /// No such credential for that merchant.
        case notFound
    }

    /// Marks the credential `unlinked` and shreds its secrets, exactly once: only the first call returns `.changed`.
    /// The change records its `credential.unlinked` event (``CredentialEventStore``) in the same transaction, so
    /// the merchant is told exactly once, whichever path unlinked it.
    public func markUnlinked(_ id: String, merchantId: String, reason: String, on connection: PostgresConnection) throws -> StateChange {
        try Self.atomically(connection) { transaction in
            let change = try leaveActive(id, merchantId: merchantId, to: .unlinked, reason: reason, on: transaction)
            if case .changed(let credential) = change { try Self.recordEvent(.unlinked, credential, reason: reason, on: transaction) }
            return change
        }
    }

    /// Marks the credential `expired` and shreds its secrets, exactly once (the caller decided it expired:
    /// ``CredentialExpiry``-style rules live in Swift, not here).
    public func expire(_ id: String, merchantId: String, reason: String, on connection: PostgresConnection) throws -> StateChange {
        try leaveActive(id, merchantId: merchantId, to: .expired, reason: reason, on: connection)
    }

    /// Replaces the card metadata (Apple's `UPDATED_METADATA` / `UPDATED_CARD_ART`) and, when given, the last four
    /// digits and expiry it carries. Any state: a metadata event on an unlinked credential is recorded too. Records
    /// its `credential.updated` event (``CredentialEventStore``) in the same transaction.
    public func updateMetadata(_ id: String, merchantId: String, cardMetadata: JSONValue, last4: String?, expiry: CardExpiry?,
                               on connection: PostgresConnection) throws -> Credential? {
        let metadata = PostgresJSONB(String(decoding: cardMetadata.serialized(), as: UTF8.self))
        return try Self.atomically(connection) { transaction in
            let updated = try transaction.query(
                """
                UPDATE credentials SET card_metadata = $3, last4 = coalesce($4, last4), expiry = coalesce($5, expiry),
                    updated_at = clock_timestamp()
                WHERE id = $1 AND merchant_id = $2
                RETURNING \(Self.columns)
                """, [id, merchantId, metadata, last4, expiry?.description]).first.map(Self.credential)
            if let updated { try Self.recordEvent(.updated, updated, reason: nil, on: transaction) }
            return updated
        }
    }

    private static func recordEvent(_ type: CredentialEventType, _ credential: Credential, reason: String?, on transaction: PostgresConnection) throws {
        try CredentialEventStore().record(
            type, credentialId: credential.id, merchantId: credential.merchantId, paymentId: credential.paymentId,
            credential: Self.publicFields(credential), reason: reason, on: transaction)
    }

    /// `body` in the caller's transaction, or in one of its own (a change and its event commit together).
    private static func atomically<T>(_ connection: PostgresConnection, _ body: (PostgresConnection) throws -> T) throws -> T {
        connection.isInTransaction ? try body(connection) : try connection.transaction(body)
    }

    /// Shreds the secrets of every credential that has left `active` but still holds them (none should: the state
    /// change shreds in the same statement; a safety net for rows written by hand). Returns how many.
    @discardableResult
    public func shredInactive(on connection: PostgresConnection) throws -> Int {
        try connection.query(
            """
            UPDATE credentials SET key_id = NULL, nonce = NULL, ciphertext = NULL, shredded_at = clock_timestamp()
            WHERE state <> 'active' AND ciphertext IS NOT NULL RETURNING id
            """).count
    }

    private func leaveActive(_ id: String, merchantId: String, to state: CredentialState, reason: String,
                             on connection: PostgresConnection) throws -> StateChange {
        guard CredentialID.isValid(id) else { return .notFound }
        let changed = try connection.query(
            """
            UPDATE credentials SET state = $3, state_reason = $4, state_changed_at = clock_timestamp(),
                key_id = NULL, nonce = NULL, ciphertext = NULL, shredded_at = clock_timestamp(), updated_at = clock_timestamp()
            WHERE id = $1 AND merchant_id = $2 AND state = 'active'
            RETURNING \(Self.columns)
            """, [id, merchantId, state.rawValue, reason])
        if let row = changed.first { return .changed(try Self.credential(row)) }
        return try find(id, merchantId: merchantId, on: connection).map(StateChange.unchanged) ?? .notFound
    }
}
