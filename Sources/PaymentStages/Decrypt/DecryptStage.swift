import ApplePay
import Crypto
import Foundation
import Pipeline
import Postgres

/// Stage 1: job → verified (and, for merchant-decrypts merchants, decrypted) payment data.
///
/// Per batch, in the batch transaction: read, decide (``Decrypt/decide(_:_:_:now:newID:verify:)``, PaymentDomain: the
/// idempotency key, `idempotency_conflict`, duplicates in the batch, `token_replayed`, one clock), write through
/// ``PaymentStore``. The token checks are this file's (``verify(_:token:merchant:at:)``): they need ApplePay and the
/// merchant's keys, which the pure domain does not link.
public struct DecryptStage: TransactionalStageHandler {
    public let stage = Stage.decrypt
    let directory: MerchantDirectory
    let cardData: CardDataStore
    private let decryptor: ApplePayDecryptor
    private let verificationClock: VerificationClock
    private let payments = PaymentStore()
    /// Tokens decrypted per merchant key (flushed by the worker's upkeep rounds, ``DecryptWorker``).
    let keyUsage = KeyUsageCounter()
    /// Payments by token type and merchant (``TokenTypeCounter``, TokenCounters.swift).
    let tokenTypes = TokenTypeCounter()

    /// - Parameter maxQueueAge: `PAYPIPE_MAX_QUEUE_AGE`, the oldest publish timestamp accepted (``VerificationClock``);
    ///   its future bound is the verifier's signing-time future skew.
    public init(directory: MerchantDirectory, cardData: CardDataStore, decryptor: ApplePayDecryptor,
                maxQueueAge: TimeInterval = VerificationClock.defaultMaxQueueAge) {
        self.directory = directory
        self.cardData = cardData
        self.decryptor = decryptor
        self.verificationClock = VerificationClock(
            maxQueueAge: maxQueueAge, maxFutureSkew: decryptor.configuration.signingTimeMaxFutureSkew)
    }

    /// The payment's id is decided in the batch; its job names it.
    public func spanAttributes(of input: DecryptInput) -> [SpanAttribute] {
        switch input {
        case .job(let job, _): [SpanAttribute("jobId", job.jobId), SpanAttribute("merchantId", job.merchantId)]
        case .invalid(let merchantId, let jobId, _, _, _, _): [SpanAttribute("jobId", jobId), SpanAttribute("merchantId", merchantId)]
        }
    }

    public func decode(_ message: InboundMessage) throws(StageFailure) -> DecryptInput {
        do {
            var job = try PaymentJob.decode(message.body)
            // The payment's row keeps this handling's context: a re-drive from the row continues the job's trace.
            (job.traceparent, job.tracestate) = (message.trace.traceparent, message.trace.state)
            return .job(job, publishedAt: message.publishedAt)
        } catch {
            switch error {
            case .unaddressed(let reason):
                throw .unattributable(code: "malformed_job", reason: reason)
            case .invalid(let merchantId, let jobId, let hash, let reason):
                return .invalid(merchantId: merchantId, jobId: jobId, contentHash: hash, reason: reason,
                                traceparent: message.trace.traceparent, tracestate: message.trace.state)
            }
        }
    }

    /// The batch's one path: one read (the payments under the jobs' keys and the tokens' claimed `transactionId`s),
    /// the merchants, ``Decrypt/decide(_:_:_:now:newID:verify:)`` with the token checks (run only for the jobs that
    /// need them, and under no row lock), then the writes: every new payment — decrypted with its sealed card data, or
    /// failed — in one statement, and the rare payment found still `received` in one or two more. Two statements for
    /// a plain batch.
    public func handle(_ inputs: [DecryptInput], transaction: PostgresConnection) throws -> [Result<StageOutcome, StageFailure>] {
        let checks = TokenChecks()
        checks.counter = tokenTypes
        return try handle(inputs, transaction: transaction, checks: checks)
    }

    /// The runtime's batch transaction around ``handle(_:transaction:)``, with one ``TokenChecks`` for the whole batch:
    /// when a failing statement makes it run `handle` again on halves (down to single jobs), each job's token is still
    /// parsed, verified and decrypted once, not once per run (about log₂ n runs of a job in a batch of n).
    public func process(_ batch: [DecryptInput], database: PostgresConnection) -> [Result<StageOutcome, StageFailure>] {
        let checks = TokenChecks()
        checks.counter = tokenTypes
        return BatchTransaction.settle(batch, on: database) { try handle($0, transaction: $1, checks: checks) }.map { $0.flatMap { $0 } }
    }

    func handle(_ inputs: [DecryptInput], transaction: PostgresConnection, checks: TokenChecks) throws -> [Result<StageOutcome, StageFailure>] {
        let now = checks.now
        // Each key's token parsed once: its `transactionId` is read before the checks, which reuse the parse.
        var tokens: [Decrypt.JobKey: Result<ApplePayToken, ApplePayError>] = [:]
        var keys: [Decrypt.JobKey] = []
        var seen: Set<Decrypt.JobKey> = []
        var transactionIds: [String] = []
        for input in inputs where seen.insert(input.key).inserted {
            keys.append(input.key)
            guard case .job(let job, _) = input else { continue }
            // A job carrying a processor's own credential has that credential's replay key and no token to parse.
            if let replayKey = ConnectorRegistry.credentialReplayKey(job) ?? CredentialJobs.claimKey(job) {
                transactionIds.append(replayKey)
            } else {
                let parsed = checks.parsed(job)
                tokens[input.key] = parsed
                if let id = try? parsed.get().transactionId { transactionIds.append(id) }
            }
        }
        // A payment another worker inserted, claimed or settled after the read makes a write come up short. The batch is
        // then decided once more on a fresh read in the same transaction, where the other worker's rows are committed
        // (the insert waited for them) and this run's own rows read as existing, so their outcomes stay the same.
        let credentialJobs = try CredentialJobs.lookUp(inputs.compactMap { if case .job(let job, _) = $0 { job } else { nil } }, on: transaction)
        for _ in 1...2 {
            let found = try payments.decryptRows(
                keys: keys, transactionIds: transactionIds, on: transaction)
            let rows = Decrypt.Rows(
                payments: found.payments, claimedTransactionIds: found.claimed,
                merchants: try directory.lookups(keys.map(\.merchantId), on: transaction))
            let decisions = Decrypt.decide(rows, inputs, verificationClock, now: now) {
                (job: PaymentJob, merchant: MerchantDirectory.Entry, instant: Date) -> Result<Decrypt.Verified<StoredPaymentData>, Rejection> in
                checks.verified(job, at: instant) {
                    if let rejection = credentialJobs.rejection(job, connector: merchant.merchant.config.gateway?.connector, at: instant) {
                        return .failure(rejection)
                    }
                    return credentialJobs.withCredentialTokenType(job, verify(
                        job, token: tokens[Decrypt.JobKey(merchantId: job.merchantId, jobId: job.jobId)] ?? checks.parsed(job), merchant: merchant, at: instant))
                }
            }
            if try apply(decisions, of: inputs, receivedAt: now, on: transaction) {
                return decisions.map { decision in decision.outcome.map { StageOutcome.handOff(to: $0.stage, $0.message) } }
            }
        }
        throw StageFailure.transient(code: "database_conflict", reason: "jobs of the batch kept being handled concurrently")
    }

    /// One batch's clock, token parses and checks, kept across the runs of `handle` for it. The clock is taken once,
    /// so every run decides with the same `now` (the same `first_received_at`, so the same verification instant). The
    /// checks are keyed by job (key and content) and the instant decide chose: what they give depends on nothing else
    /// that can change inside one batch, and they are the stage's CPU work (signature, chain, ECDH and AES-GCM). Lives
    /// only as long as the batch (it holds decrypted card data, like the decisions do).
    final class TokenChecks {
        let now = DecryptStage.databaseTime(Date())
        private struct JobIdentity: Hashable {
            let key: Decrypt.JobKey
            let contentHash: [UInt8]

            init(_ job: PaymentJob) {
                (key, contentHash) = (Decrypt.JobKey(merchantId: job.merchantId, jobId: job.jobId), job.contentHash)
            }
        }

        private struct Check: Hashable {
            let job: JobIdentity
            let instant: Date
        }

        private var parses: [JobIdentity: Result<ApplePayToken, ApplePayError>] = [:]
        private var checks: [Check: Result<Decrypt.Verified<StoredPaymentData>, Rejection>] = [:]

        func parsed(_ job: PaymentJob) -> Result<ApplePayToken, ApplePayError> {
            let identity = JobIdentity(job)
            if let parsed = parses[identity] { return parsed }
            let parsed = Result { () throws(ApplePayError) in try ApplePayToken.parse(job.applePayToken) }
            parses[identity] = parsed
            return parsed
        }

        /// Counts each job's token type once per batch, however many runs decide it.
        var counter: TokenTypeCounter?

        func verified(_ job: PaymentJob, at instant: Date,
                      _ check: () -> Result<Decrypt.Verified<StoredPaymentData>, Rejection>) -> Result<Decrypt.Verified<StoredPaymentData>, Rejection> {
            let key = Check(job: JobIdentity(job), instant: instant)
            if let result = checks[key] { return result }
            let result = check()
            checks[key] = result
            if case .success(let verified) = result { counter?.record(merchantId: job.merchantId, tokenType: verified.token.type) }
            return result
        }
    }

    /// The decisions' writes, through the store; `false` when a statement did not write every payment it was given
    /// (a concurrent worker inserted, claimed or settled one after the read). `inputs` are the messages decided, one
    /// per decision in order (a payment settled from `received` takes its job's members from its message).
    private func apply(_ decisions: [Decrypt.Decision<StoredPaymentData>], of inputs: [DecryptInput], receivedAt: Date,
                       on transaction: PostgresConnection) throws -> Bool {
        var created: [Decrypt.NewPayment<DataVault.SealedBox>] = []
        var decrypted: [(id: UUID, job: PaymentJob?, verified: Decrypt.Verified<DataVault.SealedBox>)] = []
        var failing: [PaymentStore.Failing] = []
        for (decision, input) in zip(decisions, inputs) {
            switch decision {
            case .create(let new):
                created.append(try new.map { try cardData.seal($0, for: new.id) })
            case .settle(let existing, .decrypted(let verified)):
                let job: PaymentJob? = if case .job(let job, _) = input { job } else { nil }
                decrypted.append((existing.id, job, Decrypt.Verified(
                    transactionId: verified.transactionId, payload: try cardData.seal(verified.payload, for: existing.id), token: verified.token)))
            case .settle(let existing, .failed(let rejection)):
                failing.append(try PaymentStore.Failing(paymentId: existing.id, from: .received, rejection: rejection))
            case .handOff, .reject:
                break
            }
        }
        let written = try payments.insertNew(created, receivedAt: receivedAt, on: transaction).count
            + payments.decryptReceived(decrypted, on: transaction).count + payments.fail(failing, on: transaction).count
        return written == created.count + decrypted.count + failing.count
    }

    /// The time as PostgreSQL stores it (whole microseconds), so the clock the tokens were verified with is exactly
    /// the `first_received_at` that is read back later.
    static func databaseTime(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1_000_000).rounded() / 1_000_000)
    }

    /// The token checks without the database: verify (and decrypt, for merchant-decrypts merchants) the parsed token
    /// with `clock` (the ``VerificationClock`` instant decide chose) as the current time, the application data, amount
    /// and currency against the job.
    func verify(_ job: PaymentJob, token parsed: Result<ApplePayToken, ApplePayError>, merchant: MerchantDirectory.Entry,
                at clock: Date) -> Result<Decrypt.Verified<StoredPaymentData>, Rejection> {
        if let reason = ConnectorRegistry.jobMismatch(job, connector: merchant.merchant.config.gateway?.connector) {
            return .failure(Rejection(code: "malformed_token", reason: reason))
        }
        if job.amountPending, merchant.merchant.config.gateway?.connector.capabilities.deferredAmount != true {
            return .failure(Rejection(code: "amount_pending_not_supported",
                                      reason: "amountPending needs a connector with the deferredAmount capability; this merchant's has none"))
        }
        if let merchantInitiated = CredentialJobs.merchantInitiated(job) {
            return .success(merchantInitiated)
        }
        if let replayKey = ConnectorRegistry.credentialReplayKey(job), let data = ConnectorRegistry.credentialData(job, publishedAt: clock) {
            // No token: the credential and its publish time (its age is measured from it) go to authorize.
            return .success(Decrypt.Verified(transactionId: replayKey, payload: data, token: TokenTypeCounter.facts(nil)))
        }
        let token: ApplePayToken
        var decrypted: DecryptedPaymentData?
        do {
            token = try parsed.get()
            if merchant.merchant.config.gateway?.mode == .gatewayDecrypts {
                try decryptor.verify(token, now: clock)
            } else {
                decrypted = try decryptor.decrypt(token, keyring: merchant.keyring, now: clock)
                keyUsage.record(merchantId: job.merchantId, publicKeyHash: token.publicKeyHash)
            }
        } catch {
            return .failure(Rejection(code: error.code, reason: error.description))
        }
        // After the signature check, which covers the header's applicationData.
        if let reason = ApplicationDataBinding.mismatch(
            headerHash: token.applicationData, jobBytes: job.applicationData, check: merchant.merchant.config.applicationDataCheck ?? .strict) {
            return .failure(Rejection(code: "application_data_mismatch", reason: reason))
        }
        if let decrypted {
            guard decrypted.transactionAmount == job.amount.value else {
                return .failure(Rejection(code: "amount_mismatch", reason: "token amount \(decrypted.transactionAmount) differs from the job amount \(job.amount.value)"))
            }
            guard Currency.numeric(decrypted.currencyCode) == job.amount.currency else {
                return .failure(Rejection(code: "amount_mismatch", reason: "token currency \(decrypted.currencyCode) differs from the job currency \(job.amount.currency.code)"))
            }
        }
        let stored = StoredPaymentData(
            decrypted: decrypted,
            walletToken: decrypted == nil ? String(decoding: job.applePayToken, as: UTF8.self) : nil,
            paymentMethodDisplayName: token.paymentMethod?.displayName, paymentMethodNetwork: token.paymentMethod?.network,
            billingContact: job.billingContact, shippingContact: job.shippingContact)
        return .success(Decrypt.Verified(transactionId: token.transactionId, payload: stored, token: TokenTypeCounter.facts(decrypted)))
    }
}

/// Apple's step 6: the token header's `applicationData` is the SHA-256 of the bytes the app set in
/// `PKPaymentRequest.applicationData`; the job carries those bytes (`applicationData`, base64), so a token minted for
/// one order cannot be submitted with another order's job. A pure decision.
public enum ApplicationDataBinding {
    /// The merchant document's `applicationDataCheck`.
    public enum Check: String, Codable, Sendable, Equatable, CaseIterable {
        /// Default: both sides must agree, including on absence.
        case strict
        /// Migration aid: a token header with `applicationData` is accepted from a job that does not send it yet.
        case whenPresent = "when-present"
    }

    /// Why the two sides disagree (the `application_data_mismatch` reason), or nil when they agree.
    /// - Parameters:
    ///   - headerHash: the token header's decoded `applicationData` (32 bytes for Apple's SHA-256).
    ///   - jobBytes: the job's decoded `applicationData`.
    public static func mismatch(headerHash: [UInt8]?, jobBytes: [UInt8]?, check: Check) -> String? {
        switch (headerHash, jobBytes) {
        case (nil, nil):
            return nil
        case (.some, nil):
            return check == .whenPresent ? nil : "the token header has applicationData but the job has none"
        case (nil, .some):
            return "the job has applicationData but the token header has none"
        case (let header?, let job?):
            return SHA256.hash(job) == header ? nil : "SHA-256 of the job's applicationData differs from the token header's"
        }
    }
}

/// Decrypt's part of stored credentials (docs/recurring.md) for jobs that store a credential (CIT, `storeCredential`)
/// or charge one (MIT, `initiator` `merchant`): the ``CredentialCheck`` refusals, made here, before any gateway call,
/// with the batch's credentials read in one statement (none for a batch without MIT jobs).
struct CredentialJobs {
    /// The batch's MIT credentials by id (any merchant: ``CredentialCheck`` compares the merchant).
    let credentials: [String: CredentialCheck.Stored]
    /// Their token types: an MIT reports the type of the token its credential was stored from.
    var tokenTypes: [String: TokenType] = [:]

    /// The key an MIT claims in place of a token's `transactionId` (it has no token): its own job key, so the column's
    /// uniqueness holds and no other job can claim it; nil for any other job.
    static func claimKey(_ job: PaymentJob) -> String? {
        job.merchantInitiated == nil ? nil : "mit:\(job.merchantId)/\(job.jobId)"
    }

    /// What decrypt stores for an accepted MIT: nothing to decrypt, only the job's contacts; authorize reads the
    /// credential's sealed references (``CredentialStore``) for the processor.
    static func merchantInitiated(_ job: PaymentJob) -> Decrypt.Verified<StoredPaymentData>? {
        guard let key = claimKey(job) else { return nil }
        let contacts = StoredPaymentData(decrypted: nil, walletToken: nil, paymentMethodDisplayName: nil, paymentMethodNetwork: nil,
                                         billingContact: job.billingContact, shippingContact: job.shippingContact)
        return Decrypt.Verified(transactionId: key, payload: contacts, token: TokenTypeCounter.facts(nil))
    }

    static func lookUp(_ jobs: [PaymentJob], on connection: PostgresConnection) throws -> CredentialJobs {
        let ids = Array(Set(jobs.compactMap(\.merchantInitiated?.credentialId)))
        guard !ids.isEmpty else { return CredentialJobs(credentials: [:]) }
        let rows = try connection.query(
            "SELECT id, merchant_id, connector, usage, state, expiry, token_type FROM credentials WHERE id = ANY($1::text[])", [PostgresArray(ids)])
        var credentials: [String: CredentialCheck.Stored] = [:]
        var tokenTypes: [String: TokenType] = [:]
        for row in rows {
            tokenTypes[try row.decode("id")] = TokenType(rawValue: try row.decode("token_type"))
            guard let usage = CredentialUsage(rawValue: try row.decode("usage")), let state = CredentialState(rawValue: try row.decode("state")) else { continue }
            credentials[try row.decode("id")] = CredentialCheck.Stored(
                merchantId: try row.decode("merchant_id"), connector: try row.decode("connector"), usage: usage, state: state,
                expiry: try row.decode("expiry", as: String?.self).flatMap { CardExpiry($0) })
        }
        return CredentialJobs(credentials: credentials, tokenTypes: tokenTypes)
    }

    /// An accepted MIT's verification with its credential's token type (decrypt saw no token of its own).
    func withCredentialTokenType(_ job: PaymentJob, _ verified: Result<Decrypt.Verified<StoredPaymentData>, Rejection>)
        -> Result<Decrypt.Verified<StoredPaymentData>, Rejection> {
        guard let id = job.merchantInitiated?.credentialId, let type = tokenTypes[id], case .success(let mit) = verified else { return verified }
        return .success(Decrypt.Verified(transactionId: mit.transactionId, payload: mit.payload, token: TokenFacts(type: type)))
    }

    /// The refusal of a CIT or MIT job for a merchant whose connector is `connector`, or nil: an accepted one goes on,
    /// authorize sends it with the connector's stored-credential fields and submit records a CIT's credential.
    func rejection(_ job: PaymentJob, connector: ConnectorKind?, at now: Date) -> Rejection? {
        let name = connector?.rawValue ?? "none"
        if let usage = job.storeCredential {
            return CredentialCheck.store(usage, connector: name, support: connector?.storedCredentials)
        }
        guard let mit = job.merchantInitiated else { return nil }
        return CredentialCheck.charge(
            merchantId: job.merchantId, credentialId: mit.credentialId, reason: mit.reason, stored: credentials[mit.credentialId],
            connector: name, support: connector?.storedCredentials, now: now)
    }
}
