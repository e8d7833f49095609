import Foundation
import JSON
import Pipeline
import Postgres

/// Applies pulled merchant-token events to the stored credentials (``CredentialStore``, migration 13), in one
/// transaction per batch: the events are locked, each is decided again from its stored answer
/// (``MerchantTokenEventAction``, the one rule), applied to every credential of its merchant with that
/// `merchantTokenIdentifier`, and marked `applied` with what it did.
///
/// `UNLINK` moves the credential to `unlinked` (its secrets shredded; later MITs fail `credential_unlinked`) exactly
/// once: only the event that changed it reports `.unlinked`, a repeat reports `.alreadyUnlinked`. The returned
/// changes are what the merchant is to be told (`credential.unlinked`, `credential.updated`).
public struct MerchantTokenEventApplier: Sendable {
    public let credentials: CredentialStore
    private let events = MerchantTokenEventStore()

    public init(credentials: CredentialStore) {
        self.credentials = credentials
    }

    /// What applying one event did to one credential (or to none).
    public enum Change: Sendable, Equatable {
        case unlinked(credentialId: String, merchantId: String)
        case alreadyUnlinked(credentialId: String)
        case updated(credentialId: String, merchantId: String)
        /// No credential of the merchant carries the token (PayPipe stored none, or the notification named no merchant).
        case noCredential
        /// Nothing to apply (``MerchantTokenEventAction/ignore(_:)``).
        case ignored(String)

        var note: String {
            switch self {
            case .unlinked(let id, _): "credential \(id) unlinked"
            case .alreadyUnlinked(let id): "credential \(id) was already unlinked"
            case .updated(let id, _): "credential \(id) metadata updated"
            case .noCredential: "no credential carries this merchant token"
            case .ignored(let reason): reason
            }
        }
    }

    /// Applies up to `limit` pulled events; returns each event's changes.
    @discardableResult
    public func applyPulled(limit: Int = 100, on connection: PostgresConnection) throws -> [String: [Change]] {
        try connection.transaction { transaction in
            var changes: [String: [Change]] = [:]
            for (eventId, merchantId, event) in try events.lockPulled(limit: limit, on: transaction) {
                changes[eventId] = try apply(MerchantTokenEventAction.decide(event), merchantId: merchantId, on: transaction)
            }
            try events.markApplied(changes.mapValues { $0.map(\.note).joined(separator: "; ") }, on: transaction)
            return changes
        }
    }

    func apply(_ action: MerchantTokenEventAction, merchantId: String?, on transaction: PostgresConnection) throws -> [Change] {
        let identifier: String
        switch action {
        case .ignore(let reason): return [.ignored(reason)]
        case .unlink(let token, _), .updateMetadata(let token, _): identifier = token
        }
        // Without a merchant in the path there is no merchant to scope the token by: it matches nothing.
        guard let merchantId else { return [.noCredential] }
        let found = try credentials.find(merchantTokenIdentifier: identifier, merchantId: merchantId, on: transaction)
        guard !found.isEmpty else { return [.noCredential] }
        var changes: [Change] = []
        for credential in found {
            switch action {
            case .unlink(_, let reason):
                switch try credentials.markUnlinked(credential.id, merchantId: merchantId, reason: "Apple UNLINK (\(reason))", on: transaction) {
                case .changed: changes.append(.unlinked(credentialId: credential.id, merchantId: merchantId))
                default: changes.append(.alreadyUnlinked(credentialId: credential.id))
                }
            case .updateMetadata(_, let metadata):
                let card = metadata?["cardMetadata"]
                let suffix = card?["fpanSuffix"]?.stringValue.flatMap { $0.count == 4 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) ? $0 : nil }
                let expiry = card?["expirationDate"]?.stringValue.flatMap { CardExpiry(cardMetadataExpirationDate: $0) }
                if try credentials.updateMetadata(credential.id, merchantId: merchantId, cardMetadata: metadata ?? .object([]),
                                                  last4: suffix, expiry: expiry, on: transaction) != nil {
                    changes.append(.updated(credentialId: credential.id, merchantId: merchantId))
                }
            case .ignore:
                break
            }
        }
        return changes
    }
}
