import Crypto
import Foundation
import JSON
import PaymentDomain
@testable import Pipeline
import Postgres
import Testing

extension Integration {
/// Migration 13 and `CredentialStore` on the real PostgreSQL: one credential per storing payment, found only by its
/// merchant, secrets sealed at rest (no plaintext reference or token number in the row), and a state change that
/// happens exactly once and shreds the secrets in the same statement.
@Suite struct CredentialStoreTests {
    static let secrets = CredentialSecrets(
        references: ["parentTransactionReference": "59-9-123456"],
        networkToken: .init(number: "5204245250001488", expiry: "2030-12"))

    static func store() throws -> CredentialStore {
        CredentialStore(vault: DataVault(keyring: DataKeyring(current: try DataKey(bytes: SecureRandom.bytes(count: 32)))))
    }

    /// A clean database with merchants `m1` and `m2` and one payment of `m1`.
    static func payment(reset: Bool = true, jobId: String = "j1", on connection: PostgresConnection) throws -> UUID {
        if reset {
            try TestServices.resetDatabase()
            try connection.query("INSERT INTO merchants (id) VALUES ('m1'), ('m2')")
        }
        let id = UUID()
        try connection.query(
            """
            INSERT INTO payments (id, merchant_id, job_id, job_hash, amount_minor, currency, status, stage, first_received_at)
            VALUES ($1, 'm1', $2, $3, 999, 'GBP', 'submitting', 'submit', now())
            """, [id, jobId, [UInt8(1)]])
        return id
    }

    static func new(_ paymentId: UUID, secrets: CredentialSecrets = secrets) -> CredentialStore.NewCredential {
        CredentialStore.NewCredential(
            merchantId: "m1", paymentId: paymentId, connector: "trustpayments", usage: .recurring, tokenType: .merchant,
            network: "visa", last4: "1234", expiry: CardExpiry(year: 2030, month: 12), merchantTokenIdentifier: "DNITHE000000000000000001",
            cardMetadata: .object([("cardMetadata", .object([("fpanSuffix", .string("1234"))]))]), secrets: secrets)
    }

    @Test func aStoringPaymentStoresOneCredentialFoundOnlyByItsMerchant() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let store = try Self.store()
        let paymentId = try Self.payment(on: connection)
        let credential = try store.create(Self.new(paymentId), on: connection)
        #expect(CredentialID.isValid(credential.id))
        #expect(credential.state == .active && !credential.isShredded && credential.expiry?.description == "2030-12")
        // A redelivered CIT: the first row wins, even with other secrets.
        let again = try store.create(Self.new(paymentId, secrets: CredentialSecrets(references: ["x": "y"])), on: connection)
        #expect(again.id == credential.id)
        #expect(try store.secrets(again, on: connection) == Self.secrets)
        #expect(try connection.query("SELECT count(*) AS n FROM credentials")[0].decode("n", as: Int.self) == 1)

        #expect(try store.find(credential.id, merchantId: "m1", on: connection) == credential)
        #expect(try store.find(credential.id, merchantId: "m2", on: connection) == nil)
        #expect(try store.find("cred_000000000000000000000000", merchantId: "m1", on: connection) == nil)
        #expect(try store.find("'; DROP TABLE credentials; --", merchantId: "m1", on: connection) == nil)
        #expect(try store.find(merchantTokenIdentifier: "DNITHE000000000000000001", on: connection).map(\.id) == [credential.id])
        #expect(try store.find(merchantTokenIdentifier: "DNITHE000000000000000001", merchantId: "m2", on: connection).isEmpty)
        #expect(try store.list(merchantId: "m1", on: connection).map(\.id) == [credential.id])
        #expect(try store.list(merchantId: "m1", state: .unlinked, on: connection).isEmpty)
    }

    @Test func secretsAreSealedAtRestAndBoundToTheirRow() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let store = try Self.store()
        let first = try store.create(Self.new(try Self.payment(on: connection)), on: connection)
        let second = try store.create(Self.new(try Self.payment(reset: false, jobId: "j2", on: connection)), on: connection)
        // Nothing secret in any column, as text: neither the reference nor the token number.
        let dump = try connection.query("SELECT c::text AS row FROM credentials c").map { try $0.decode("row", as: String.self) }.joined()
        for secret in ["59-9-123456", "5204245250001488", "parentTransactionReference"] {
            #expect(!dump.contains(secret))
            #expect(!dump.contains(Data(secret.utf8).base64EncodedString()))
        }
        // A blob copied onto another credential's row fails to open (AAD = credential id).
        try connection.query(
            "UPDATE credentials SET ciphertext = (SELECT ciphertext FROM credentials WHERE id = $1), nonce = (SELECT nonce FROM credentials WHERE id = $1) WHERE id = $2",
            [first.id, second.id])
        #expect(throws: DataVault.VaultError.authenticationFailed) { try store.secrets(second, on: connection) }
    }

    @Test func unlinkingAndExpiringHappenOnceAndShredTheSecrets() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let store = try Self.store()
        let credential = try store.create(Self.new(try Self.payment(on: connection)), on: connection)
        #expect(try store.markUnlinked(credential.id, merchantId: "m2", reason: "USER", on: connection) == .notFound)
        guard case .changed(let unlinked) = try store.markUnlinked(credential.id, merchantId: "m1", reason: "USER", on: connection) else {
            Issue.record("the first unlink did not change the credential")
            return
        }
        #expect(unlinked.state == .unlinked && unlinked.stateReason == "USER" && unlinked.isShredded && unlinked.stateChangedAt != nil)
        #expect(try store.secrets(unlinked, on: connection) == nil)
        #expect(try connection.query("SELECT count(*) AS n FROM credentials WHERE nonce IS NOT NULL OR key_id IS NOT NULL")[0].decode("n", as: Int.self) == 0)
        // A repeated unlink and a later expiry change nothing.
        #expect(try store.markUnlinked(credential.id, merchantId: "m1", reason: "again", on: connection) == .unchanged(unlinked))
        #expect(try store.expire(credential.id, merchantId: "m1", reason: "expired", on: connection) == .unchanged(unlinked))

        let other = try store.create(Self.new(try Self.payment(reset: false, jobId: "j2", on: connection)), on: connection)
        guard case .changed(let expired) = try store.expire(other.id, merchantId: "m1", reason: "card expired 2030-12", on: connection) else {
            Issue.record("the expiry did not change the credential")
            return
        }
        #expect(expired.state == .expired && expired.isShredded)
        // The table itself refuses an inactive credential that keeps its secrets.
        #expect(throws: PostgresError.self) {
            try connection.query("UPDATE credentials SET key_id = 'k', nonce = $2, ciphertext = $2, shredded_at = NULL WHERE id = $1",
                                 [other.id, [UInt8(0)]])
        }
    }

    @Test func metadataUpdatesKeepWhatTheEventDoesNotCarry() throws {
        let connection = try TestServices.database()
        defer { connection.close() }
        let store = try Self.store()
        let credential = try store.create(Self.new(try Self.payment(on: connection)), on: connection)
        let art: JSONValue = .object([("cardArt", .array([.object([("url", .string("https://example.com/a.png"))])]))])
        let updated = try #require(try store.updateMetadata(credential.id, merchantId: "m1", cardMetadata: art, last4: nil,
                                                            expiry: CardExpiry(year: 2031, month: 1), on: connection))
        #expect(updated.cardMetadata == art && updated.last4 == "1234" && updated.expiry?.description == "2031-01")
        #expect(try store.updateMetadata(credential.id, merchantId: "m2", cardMetadata: art, last4: nil, expiry: nil, on: connection) == nil)
        #expect(try store.secrets(updated, on: connection) == Self.secrets)
    }
}
}
