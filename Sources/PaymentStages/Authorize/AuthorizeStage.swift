import Foundation
import Pipeline
import Postgres

/// Stage 2: decrypted payment → the stored, ready-to-send request of the merchant's connector.
///
/// Per batch, inside the batch transaction: lock the payments; a payment already past `decrypted` (a redelivery, a
/// duplicate hand-off) is handed to wherever it is now; otherwise the merchant's gateway settings and the stored
/// card data are validated and built into the connector's request (``ConnectorRequestBuilder``), stored encrypted in
/// `gateway_requests`, and the payment advances `decrypted → prepared` and is handed to submit. A validation error
/// ends the payment `failed` with its ``AuthorizeError`` code and hands it to notification. The rules are
/// ``Authorize/decide(_:_:merchants:now:build:)``'s (PaymentDomain).
///
/// No network I/O happens here, so the whole effect is part of the batch transaction; signing happens in
/// the submit stage at send time, by the connector (a signed request is signed then, with a fresh `iat`).
public struct AuthorizeStage: TransactionalStageHandler {
    public let stage = Stage.authorize
    private let directory: MerchantDirectory
    private let cardData: CardDataStore
    let requests: GatewayRequestStore
    private let clock: @Sendable () -> Date
    private let payments = PaymentStore()
    /// Opens an MIT's credential references (sealed under the same data key as the card data).
    private var credentials: CredentialStore { CredentialStore(vault: cardData.vault) }

    /// - Parameter clock: the initial `iat` of built claims (informational: submit re-signs with its own clock).
    public init(
        directory: MerchantDirectory, cardData: CardDataStore, requests: GatewayRequestStore,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.directory = directory
        self.cardData = cardData
        self.requests = requests
        self.clock = clock
    }

    public func spanAttributes(of message: StageMessage) -> [SpanAttribute] { message.spanAttributes }

    public func decode(_ message: InboundMessage) throws(StageFailure) -> StageMessage {
        try StageMessage.decode(message.body)
    }

    /// The batch's one path: lock the batch's payments with their card data in one statement (``lockWithCardData(_:on:)``), read
    /// the merchants, decide (``Authorize/decide(_:_:merchants:now:build:)``, PaymentDomain) with the claims built here
    /// (``ConnectorRequestBuilder``), then store the requests and advance the payments in one statement and fail
    /// the rejected ones in another (only when there are any).
    public func handle(_ messages: [StageMessage], transaction: PostgresConnection) throws -> [Result<StageOutcome, StageFailure>] {
        let locked = try Self.lockWithCardData(messages.map(\.paymentId), on: transaction)
        let merchants = try directory.lookups(Set(locked.values.filter { $0.status == .decrypted }.map(\.merchantId)), on: transaction)
        let decisions = Authorize.decide(locked, messages, merchants: merchants, now: clock()) {
            (payment: Authorize.Locked<Row>, merchant: MerchantDirectory.Entry?, now: Date) -> Authorize.Built<GatewayRequest> in
            let data: StoredPaymentData?
            do {
                data = try payment.row.card.map { try cardData.open($0, for: payment.id) } ?? nil
            } catch {
                return .unavailable(FailureClassifier.classify(error))
            }
            // A deferred payment's credential waits until a completion set the amount (``DeferredAmount``).
            if data?.credential?.amountPending == true, payment.row.amountCompletedAt == nil { return .awaitingAmount }
            var details = payment.row.details
            do {
                switch try payment.row.storedCredential.intent(credentials) {
                case .success(let intent): details.storedCredential = intent
                case .failure(let rejection): return .rejected(rejection)
                }
            } catch {
                return .unavailable(FailureClassifier.classify(error))
            }
            do throws(ConnectorBuildError) {
                return .request(try ConnectorRequestBuilder.build(
                    gateway: merchant?.merchant.config.gateway, secrets: merchant?.merchant.secrets, payment: details, data: data,
                    issuedAt: now))
            } catch {
                return .rejected(Rejection(code: error.code, reason: error.reason))
            }
        }
        var prepared: [PaymentStore.PreparedRequest] = []
        var failing: [PaymentStore.Failing] = []
        var parking: [UUID] = []
        for decision in decisions {
            switch decision {
            case .prepare(let message, let request):
                prepared.append(PaymentStore.PreparedRequest(
                    paymentId: message.paymentId, orderReference: request.orderReference, requestTypes: request.requestTypes,
                    sealed: try requests.seal(request, for: message.paymentId)))
            case .fail(let message, let rejection):
                failing.append(try PaymentStore.Failing(paymentId: message.paymentId, from: .decrypted, rejection: rejection))
            case .awaitAmount(let message, true):
                parking.append(message.paymentId)
            case .handOff, .reject, .awaitAmount:
                break
            }
        }
        // The rows are locked and were `decrypted`: a statement that leaves one unwritten is a bug, not a race.
        guard try payments.prepare(prepared, actor: "authorize", on: transaction).count == prepared.count,
              try payments.fail(failing, on: transaction).count == failing.count,
              try payments.awaitAmount(parking, actor: "authorize", on: transaction).count == parking.count else {
            throw StageFailure.transient(code: "database_conflict", reason: "a locked payment of the batch changed status")
        }
        return decisions.map { decision in decision.outcome.map { StageOutcome.handOff(to: $0.stage, $0.message) } }
    }

    /// What the batch read holds of a payment: the columns its request is built from, and its unpurged card data's
    /// row (`nil` without).
    struct Row: Sendable {
        let details: GatewayPaymentDetails
        let card: PostgresRow?
        /// When a completion set a deferred payment's amount (nil: never, or not a deferred payment).
        let amountCompletedAt: Date?
        /// The usage a CIT stores, or an MIT's credential (``AuthorizeCredential``).
        let storedCredential: AuthorizeCredential
    }

    /// Locks the payments (`FOR UPDATE`: two deliveries of the same payment in concurrent lanes serialise here, and
    /// the second sees the first one's result instead of building a second request) in id order, so two lanes locking
    /// overlapping batches cannot deadlock, and reads each one's unpurged card data along (`key_id`, `nonce`,
    /// `ciphertext` for ``CardDataStore/open(_:for:)``).
    static func lockWithCardData(_ ids: [UUID], on transaction: PostgresConnection) throws -> [UUID: Authorize.Locked<Row>] {
        guard !ids.isEmpty else { return [:] }
        let rows = try transaction.query(
            """
            SELECT p.id, p.merchant_id, p.job_id, p.status, p.order_reference, p.amount_minor, p.currency, p.amount_completed_at, c.key_id, c.nonce, c.ciphertext, \(AuthorizeCredential.columns)
            FROM payments p LEFT JOIN card_data c ON c.payment_id = p.id AND c.purged_at IS NULL
            \(AuthorizeCredential.join)
            WHERE p.id = ANY($1::uuid[])
            ORDER BY p.id
            FOR UPDATE OF p
            """, [PostgresArray(Array(Set(ids)))])
        var locked: [UUID: Authorize.Locked<Row>] = [:]
        for row in rows {
            let id = try row.decode("id", as: UUID.self)
            let details = GatewayPaymentDetails(
                paymentId: id, orderReference: try row.decode("order_reference", as: String?.self),
                amountMinor: try row.decode("amount_minor", as: Int64?.self), currency: try row.decode("currency", as: String?.self))
            let card = try row.decode("key_id", as: String?.self) == nil ? nil : row
            locked[id] = Authorize.Locked(
                id: id, merchantId: try row.decode("merchant_id", as: String.self), jobId: try row.decode("job_id", as: String.self),
                status: try row.decodeChoice("status"),
                row: Row(details: details, card: card, amountCompletedAt: try row.decode("amount_completed_at", as: Date?.self),
                         storedCredential: try AuthorizeCredential(row: row)))
        }
        return locked
    }
}

/// A payment's stored-credential part as authorize's lock reads it (``AuthorizeStage/lockWithCardData(_:on:)``): the usage a CIT
/// stores, or an MIT's reason with its credential's usage, state and sealed references (the credential of the
/// payment's own merchant only: the join compares the merchant).
struct AuthorizeCredential: Sendable {
    static let columns = """
        p.store_credential, p.mit_reason, p.credential_id, cr.credential_usage, cr.credential_state, cr.credential_key_id,
        cr.credential_nonce, cr.credential_ciphertext
        """
    /// Every column renamed, so none clashes with a payment column ``AuthorizeStage/lockWithCardData(_:on:)`` selects.
    static let join = """
        LEFT JOIN (SELECT id AS credential_row, merchant_id AS credential_merchant, usage AS credential_usage, state AS credential_state,
                          key_id AS credential_key_id, nonce AS credential_nonce, ciphertext AS credential_ciphertext FROM credentials) cr
               ON cr.credential_row = p.credential_id AND cr.credential_merchant = p.merchant_id
        """

    let store: CredentialUsage?
    let mitReason: MITReason?
    let credentialId: String?
    let usage: CredentialUsage?
    let state: CredentialState?
    let sealed: DataVault.SealedBox?

    init(row: PostgresRow) throws {
        store = try row.decode("store_credential", as: String?.self).flatMap(CredentialUsage.init(rawValue:))
        mitReason = try row.decode("mit_reason", as: String?.self).flatMap(MITReason.init(rawValue:))
        credentialId = try row.decode("credential_id", as: String?.self)
        usage = try row.decode("credential_usage", as: String?.self).flatMap(CredentialUsage.init(rawValue:))
        state = try row.decode("credential_state", as: String?.self).flatMap(CredentialState.init(rawValue:))
        if let keyId = try row.decode("credential_key_id", as: String?.self), let nonce = try row.decode("credential_nonce", as: [UInt8]?.self),
           let ciphertext = try row.decode("credential_ciphertext", as: [UInt8]?.self) {
            sealed = DataVault.SealedBox(keyId: keyId, nonce: nonce, ciphertext: ciphertext)
        } else {
            sealed = nil
        }
    }

    /// What the connector is asked (nil: an ordinary payment), or the refusal of an MIT whose credential left `active`
    /// after decrypt checked it (an unlink in between): the same codes, still before any gateway call.
    func intent(_ credentials: CredentialStore) throws -> Result<StoredCredentialIntent?, Rejection> {
        if let store { return .success(.store(store)) }
        guard let mitReason else { return .success(nil) }
        guard let credentialId, let usage, let state else {
            return .failure(Rejection(code: "credential_unknown", reason: "the payment's credential is not one of its merchant's"))
        }
        switch state {
        case .unlinked: return .failure(Rejection(code: "credential_unlinked", reason: "the credential was unlinked before the payment was sent"))
        case .expired: return .failure(Rejection(code: "credential_expired", reason: "the credential expired before the payment was sent"))
        case .active: break
        }
        guard let sealed else {
            return .failure(Rejection(code: "credential_unlinked", reason: "the credential holds no references any more"))
        }
        let secrets = try credentials.open(sealed, credentialId: credentialId)
        return .success(.charge(mitReason, usage: usage, references: secrets.references))
    }
}

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
