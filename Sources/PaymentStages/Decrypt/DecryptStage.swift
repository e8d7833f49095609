import AMQP
import ApplePay
import Foundation
import JSON
import Pipeline
import Postgres

/// Stage 1: job → verified (and, for merchant-decrypts merchants, decrypted) payment data.
///
/// Per job, inside the batch transaction: find the merchant; create or locate the payment by
/// (merchant, job id) — a reused job id with other content is an `idempotency_conflict` dead letter —;
/// verify and decrypt the token with the clock at the job's publish time, or its payment's first-received time
/// (``VerificationClock``); check amount and
/// currency against the job; reject a reused token `transactionId`; store the card data encrypted;
/// advance `received → decrypted`; hand off to authorize.
public struct DecryptStage: TransactionalStageHandler {
    public let stage = Stage.decrypt
    private let directory: MerchantDirectory
    let cardData: CardDataStore
    private let decryptor: ApplePayDecryptor
    private let verificationClock: VerificationClock
    private let payments = PaymentStore()
    /// Tokens decrypted per merchant key, and the certificate-expiry watch (DecryptStage+Upkeep.swift).
    let keyUsage = KeyUsageCounter()
    let certificateWatch = CertificateWatch()

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

    public func decode(_ delivery: AMQPDelivery) throws(StageFailure) -> DecryptInput {
        do {
            return .job(try PaymentJob.decode(delivery.body), publishedAt: delivery.properties.timestamp)
        } catch {
            switch error {
            case .unaddressed(let reason):
                throw .unattributable(code: "malformed_job", reason: reason)
            case .invalid(let merchantId, let jobId, let hash, let reason):
                return .invalid(merchantId: merchantId, jobId: jobId, contentHash: hash, reason: reason)
            }
        }
    }

    public func handle(_ input: DecryptInput, transaction: PostgresConnection) throws -> StageOutcome {
        let merchantId: String
        switch input {
        case .job(let job, _): merchantId = job.merchantId
        case .invalid(let id, _, _, _): merchantId = id
        }
        guard let merchant = try directory.entry(merchantId, on: transaction) else {
            throw StageFailure.unattributable(code: "unknown_merchant", reason: "merchant '\(merchantId)' is not configured")
        }
        let payment: PaymentRecord
        switch try locateOrCreate(input, on: transaction) {
        case .existing(let existing) where existing.status == .received:
            payment = existing  // never committed in this status by this stage, but harmless to finish
        case .existing(let existing):
            // A duplicate or a redelivery: the work is done; hand off to wherever the payment is now.
            return .handOff(to: existing.status.stage, existing.message)
        case .created(let created):
            payment = created
        }
        guard case .job(let job, let publishedAt) = input else {
            guard case .invalid(_, _, _, let reason) = input else { preconditionFailure() }
            return .failed(PaymentFailure(paymentId: payment.id, code: "invalid_job", reason: reason))
        }
        do {
            try process(job, publishedAt: publishedAt, payment: payment, merchant: merchant, on: transaction)
        } catch let failure as TokenFailure {
            return .failed(PaymentFailure(paymentId: payment.id, code: failure.code, reason: failure.reason))
        }
        try payments.transition(payment.id, from: .received, to: .decrypted, actor: "decrypt", on: transaction)
        return .handOff(to: .authorize, payment.message)
    }

    /// The common case of a batch in one statement (``DecryptBatch``): every new job of a known merchant whose token
    /// passes the checks becomes a `decrypted` payment with its card data and audit events. Left to ``handle(_:transaction:)``
    /// (`nil`): invalid jobs, unknown merchants, token and amount failures (the one-by-one path records them against
    /// the payment it creates), a (merchant, job id) already seen earlier in the batch — a later duplicate must find
    /// the first one's payment, and only the first occurrence may decide whether a reused id is a conflict —, a
    /// `transactionId` already claimed earlier in the batch, and every job whose insert was skipped (an existing
    /// payment, a replayed token).
    public func handleInBulk(_ inputs: [DecryptInput], transaction: PostgresConnection) throws -> [StageOutcome?] {
        let receivedAt = DecryptBatch.databaseTime(Date())
        var batch = DecryptBatch()
        var seenJobs: Set<[String]> = []
        var merchants = BatchMerchants(directory)
        for (index, input) in inputs.enumerated() {
            let job: PaymentJob, publishedAt: Date?
            switch input {
            case .invalid(let merchantId, let jobId, _, _):
                seenJobs.insert([merchantId, jobId])
                continue
            case .job(let decoded, let timestamp):
                (job, publishedAt) = (decoded, timestamp)
            }
            guard seenJobs.insert([job.merchantId, job.jobId]).inserted else { continue }
            guard let merchant = try merchants.entry(job.merchantId, on: transaction),
                  let verified = try? verify(job, merchant: merchant, publishedAt: publishedAt, firstReceivedAt: receivedAt),
                  batch.isUnclaimed(verified.transactionId) else { continue }
            let paymentId = UUID()
            batch.append(DecryptBatch.Row(
                index: index, paymentId: paymentId, job: job, transactionId: verified.transactionId,
                cardData: try cardData.seal(verified.data, for: paymentId)))
        }
        let inserted = try batch.insert(receivedAt: receivedAt, on: transaction)
        var outcomes = [StageOutcome?](repeating: nil, count: inputs.count)
        for row in batch.rows where inserted.contains(row.paymentId) {
            outcomes[row.index] = .handOff(to: .authorize, StageMessage(paymentId: row.paymentId, merchantId: row.job.merchantId, jobId: row.job.jobId))
        }
        return outcomes
    }

    /// A permanent, payment-attributable failure of the token checks.
    struct TokenFailure: Error {
        let code: String
        let reason: String
    }

    private func process(_ job: PaymentJob, publishedAt: Date?, payment: PaymentRecord, merchant: MerchantDirectory.Entry,
                         on transaction: PostgresConnection) throws {
        let verified = try verify(job, merchant: merchant, publishedAt: publishedAt, firstReceivedAt: payment.firstReceivedAt)
        guard try payments.claimTransactionId(verified.transactionId, for: payment.id, on: transaction) else {
            throw TokenFailure(code: "token_replayed", reason: "token transactionId was already used by another payment")
        }
        try cardData.save(verified.data, for: payment.id, on: transaction)
    }

    /// What the token checks yield: the token's `transactionId` (to claim) and the data to store.
    struct VerifiedToken {
        let transactionId: String
        let data: StoredPaymentData
    }

    /// The token checks without the database: parse, verify (and decrypt, for merchant-decrypts merchants) with the
    /// ``VerificationClock``'s instant as the current time, amount and currency against the job. Shared by
    /// ``handle(_:transaction:)`` and the set-based ``handleInBulk(_:transaction:)``, so both apply exactly the same checks.
    func verify(_ job: PaymentJob, merchant: MerchantDirectory.Entry, publishedAt: Date?, firstReceivedAt: Date) throws(TokenFailure) -> VerifiedToken {
        let clock = verificationClock.instant(publishedAt: publishedAt, firstReceivedAt: firstReceivedAt).instant
        let token: ApplePayToken
        var decrypted: DecryptedPaymentData?
        do {
            token = try ApplePayToken.parse(job.applePayToken)
            if merchant.merchant.config.gateway?.mode == .gatewayDecrypts {
                try decryptor.verify(token, now: clock)
            } else {
                decrypted = try decryptor.decrypt(token, keyring: merchant.keyring, now: clock)
                keyUsage.record(merchantId: job.merchantId, publicKeyHash: token.publicKeyHash)
            }
        } catch {
            throw TokenFailure(code: error.code, reason: error.description)
        }
        // After the signature check, which covers the header's applicationData.
        if let reason = ApplicationDataBinding.mismatch(
            headerHash: token.applicationData, jobBytes: job.applicationData, check: merchant.merchant.config.applicationDataCheck ?? .strict) {
            throw TokenFailure(code: "application_data_mismatch", reason: reason)
        }
        if let decrypted {
            guard decrypted.transactionAmount == job.amount.value else {
                throw TokenFailure(code: "amount_mismatch", reason: "token amount \(decrypted.transactionAmount) differs from the job amount \(job.amount.value)")
            }
            guard Currency.numeric(decrypted.currencyCode) == job.amount.currency else {
                throw TokenFailure(code: "amount_mismatch", reason: "token currency \(decrypted.currencyCode) differs from the job currency \(job.amount.currency.code)")
            }
        }
        let stored = StoredPaymentData(
            decrypted: decrypted,
            walletToken: decrypted == nil ? String(decoding: job.applePayToken, as: UTF8.self) : nil,
            paymentMethodDisplayName: token.paymentMethod?.displayName, paymentMethodNetwork: token.paymentMethod?.network,
            billingContact: job.billingContact, shippingContact: job.shippingContact)
        return VerifiedToken(transactionId: token.transactionId, data: stored)
    }

    enum Located {
        case created(PaymentRecord)
        case existing(PaymentRecord)
    }

    /// The idempotency step: (merchant_id, job_id) is unique; the content hash tells a duplicate of the
    /// same job from a reuse of its id for different content.
    private func locateOrCreate(_ input: DecryptInput, on transaction: PostgresConnection) throws -> Located {
        var new: PaymentStore.NewPayment
        switch input {
        case .job(let job, _):
            new = PaymentStore.NewPayment(merchantId: job.merchantId, jobId: job.jobId, jobHash: job.contentHash)
            (new.orderReference, new.amountMinor, new.currency, new.notifyURL) = (job.orderReference, job.amount.value, job.amount.currency.code, job.notifyURL)
            new.metadataJSON = DecryptBatch.metadataJSON(job.metadata)
            (new.captureMode, new.captureWithin) = (job.captureMode?.rawValue, job.captureWithin)
        case .invalid(let merchant, let job, let contentHash, _):
            new = PaymentStore.NewPayment(merchantId: merchant, jobId: job, jobHash: contentHash)
        }
        let (merchantId, jobId, hash) = (new.merchantId, new.jobId, new.jobHash)
        if let created = try payments.create(new, actor: "decrypt", on: transaction) {
            return .created(created)
        }
        let existing = try transaction.query(
            "SELECT job_hash, \(PaymentRecord.columns) FROM payments WHERE merchant_id = $1 AND job_id = $2", [merchantId, jobId])
        guard let row = existing.first else {
            throw StageFailure.transient(code: "database_conflict", reason: "payment vanished during idempotency check")
        }
        guard try row.decode("job_hash", as: [UInt8].self) == hash else {
            throw StageFailure.unattributable(
                code: "idempotency_conflict",
                reason: "job id '\(jobId)' of merchant '\(merchantId)' was already used for a job with different content")
        }
        return .existing(try PaymentRecord(row: row))
    }
}
