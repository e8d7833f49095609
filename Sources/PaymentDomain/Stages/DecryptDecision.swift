import Foundation

/// A decoded job for the decrypt stage: usable, or addressed to a merchant and job but invalid (which still becomes a
/// `failed` payment that the merchant is notified of). `publishedAt` is the delivery's AMQP `timestamp` property (see
/// ``VerificationClock``). An invalid job keeps its delivery's trace context as a usable job does in
/// ``PaymentJob/traceparent``: its `failed` payment's row keeps it, and a re-drive continues the trace.
public enum DecryptInput: Sendable, Equatable {
    case job(PaymentJob, publishedAt: Date? = nil)
    case invalid(merchantId: String, jobId: String, contentHash: [UInt8], reason: String, traceparent: String? = nil, tracestate: String? = nil)

    public var key: Decrypt.JobKey {
        switch self {
        case .job(let job, _): Decrypt.JobKey(merchantId: job.merchantId, jobId: job.jobId)
        case .invalid(let merchantId, let jobId, _, _, _, _): Decrypt.JobKey(merchantId: merchantId, jobId: jobId)
        }
    }

    public var contentHash: [UInt8] {
        switch self {
        case .job(let job, _): job.contentHash
        case .invalid(_, _, let hash, _, _, _): hash
        }
    }

    /// The trace context the payment's row keeps (`trace_parent`, `trace_state`).
    public var trace: (parent: String?, state: String?) {
        switch self {
        case .job(let job, _): (job.traceparent, job.tracestate)
        case .invalid(_, _, _, _, let parent, let state): (parent, state)
        }
    }
}

/// Stage 1's decisions: job → payment. Pure: the batch read (``Rows``) and the token check (`verify`, which the stage
/// supplies: Apple Pay verification and decryption with the merchant's keys) come in, the writes and outcomes go out.
public enum Decrypt {
    /// The idempotency key of a payment.
    public struct JobKey: Hashable, Sendable {
        public let merchantId: String
        public let jobId: String

        public init(merchantId: String, jobId: String) {
            (self.merchantId, self.jobId) = (merchantId, jobId)
        }
    }

    /// A payment the read found under a job's key.
    public struct Existing: Sendable, Equatable {
        public let id: UUID
        public let key: JobKey
        public let jobHash: [UInt8]
        public let status: PaymentStatus
        public let firstReceivedAt: Date

        public init(id: UUID, key: JobKey, jobHash: [UInt8], status: PaymentStatus, firstReceivedAt: Date) {
            (self.id, self.key, self.jobHash, self.status, self.firstReceivedAt) = (id, key, jobHash, status, firstReceivedAt)
        }

        public var message: StageMessage { StageMessage(paymentId: id, merchantId: key.merchantId, jobId: key.jobId) }
    }

    /// What one batch read loads for ``decide(_:_:_:now:newID:verify:)``.
    public struct Rows<Merchant: Sendable>: Sendable {
        /// Existing payments by the keys of the batch's jobs.
        public var payments: [JobKey: Existing]
        /// Which of the batch's token `transactionId`s a payment already holds.
        public var claimedTransactionIds: Set<String>
        /// Every merchant the batch names.
        public var merchants: [String: MerchantLookup<Merchant>]

        public init(payments: [JobKey: Existing] = [:], claimedTransactionIds: Set<String> = [], merchants: [String: MerchantLookup<Merchant>]) {
            (self.payments, self.claimedTransactionIds, self.merchants) = (payments, claimedTransactionIds, merchants)
        }
    }

    /// A token that passed every check: its `transactionId` (to claim) and what to store for the payment.
    public struct Verified<Payload: Sendable>: Sendable {
        public let transactionId: String
        public let payload: Payload
        /// What the payment records about its token (not secret: no card number).
        public let token: TokenFacts

        public init(transactionId: String, payload: Payload, token: TokenFacts = TokenFacts(type: .unknown)) {
            (self.transactionId, self.payload, self.token) = (transactionId, payload, token)
        }
    }

    /// How a payment leaves `received`.
    public enum Settled<Payload: Sendable>: Sendable {
        /// `decrypted`, claiming the token's `transactionId`, with the card data to store.
        case decrypted(Verified<Payload>)
        /// `failed` with the rejection's code and reason.
        case failed(Rejection)

        public var status: PaymentStatus {
            switch self {
            case .decrypted: .decrypted
            case .failed: .failed
            }
        }

        /// The token facts of a `decrypted` settlement.
        public var token: TokenFacts? {
            if case .decrypted(let verified) = self { verified.token } else { nil }
        }
    }

    /// A payment to create, already settled (its `received` step and the next one are written together).
    public struct NewPayment<Payload: Sendable>: Sendable {
        public let id: UUID
        public let key: JobKey
        public let jobHash: [UInt8]
        /// `nil` for an invalid job: only its key and hash are known.
        public let job: PaymentJob?
        public let settled: Settled<Payload>
        /// The job's trace context, an invalid job's included (``DecryptInput/trace``).
        public let traceparent: String?
        public let tracestate: String?

        /// `trace`: the input's (``DecryptInput/trace``); nil takes the job's.
        public init(id: UUID, key: JobKey, jobHash: [UInt8], job: PaymentJob?, settled: Settled<Payload>,
                    trace: (parent: String?, state: String?)? = nil) {
            (self.id, self.key, self.jobHash, self.job, self.settled) = (id, key, jobHash, job, settled)
            (traceparent, tracestate) = trace ?? (job?.traceparent, job?.tracestate)
        }

        public var message: StageMessage { StageMessage(paymentId: id, merchantId: key.merchantId, jobId: key.jobId) }

        /// The same payment with its payload transformed (e.g. the card data sealed for its id).
        public func map<Other: Sendable>(_ transform: (Payload) throws -> Other) rethrows -> NewPayment<Other> {
            let mapped: Settled<Other>
            switch settled {
            case .decrypted(let verified):
                mapped = .decrypted(Verified(transactionId: verified.transactionId, payload: try transform(verified.payload), token: verified.token))
            case .failed(let rejection):
                mapped = .failed(rejection)
            }
            return NewPayment<Other>(id: id, key: key, jobHash: jobHash, job: job, settled: mapped, trace: (traceparent, tracestate))
        }
    }

    public enum Decision<Payload: Sendable>: Sendable {
        /// A new payment, created settled.
        case create(NewPayment<Payload>)
        /// A payment found still `received` (never committed so by this stage: creation and settling share one
        /// statement), settled as a new one would be.
        case settle(Existing, Settled<Payload>)
        /// Nothing to write: the job was handled before (or earlier in the batch).
        case handOff(HandOff)
        /// Nothing to write: the message fails as a whole (dead letter or retry).
        case reject(StageFailure)

        /// Whether applying it writes anything.
        public var writes: Bool {
            switch self {
            case .create, .settle: true
            case .handOff, .reject: false
            }
        }

        /// What the runtime publishes or routes once the decision is applied.
        public var outcome: Result<HandOff, StageFailure> {
            switch self {
            case .create(let new): .success(HandOff(new.settled.status.stage, new.message))
            case .settle(let existing, let settled): .success(HandOff(settled.status.stage, existing.message))
            case .handOff(let handOff): .success(handOff)
            case .reject(let failure): .failure(failure)
            }
        }
    }

    /// The batch's decisions, one per message, in order.
    ///
    /// Per message: the merchant must be known; a key met earlier in the batch is "already handled" (``FirstDecides``)
    /// unless its content differs (`idempotency_conflict`); an existing payment with other content is a conflict, one
    /// past `received` is handed to where it is. Otherwise the token is verified (`verify`) against the
    /// ``VerificationClock`` instant for the payment's first-received time — `now` for a new payment, which becomes
    /// its `first_received_at`: one clock for the batch — and its `transactionId` must be claimed by no payment, in
    /// the database or earlier in the batch (`token_replayed`; the token checks come first).
    public static func decide<Merchant: Sendable, Payload: Sendable>(
        _ rows: Rows<Merchant>, _ messages: [DecryptInput], _ clock: VerificationClock, now: Date,
        newID: () -> UUID = UUID.init,
        verify: (PaymentJob, Merchant, Date) -> Result<Verified<Payload>, Rejection>
    ) -> [Decision<Payload>] {
        var claimed = rows.claimedTransactionIds
        var firstDecides = FirstDecides<JobKey>()
        var hashes: [JobKey: [UInt8]] = [:]
        return messages.map { input in
            let key = input.key
            let merchant: Merchant
            switch rows.merchants[key.merchantId] ?? .unknown {
            case .found(let found): merchant = found
            case .unknown:
                return .reject(.unattributable(code: "unknown_merchant", reason: "merchant '\(key.merchantId)' is not configured"))
            case .unavailable(let failure): return .reject(failure)
            }
            if let earlier = firstDecides.earlier(key) {
                return hashes[key] == input.contentHash ? .handOff(earlier) : .reject(conflict(key))
            }
            let decision = decideFirst(input, existing: rows.payments[key], merchant: merchant, claimed: &claimed, clock: clock,
                                       now: now, newID: newID, verify: verify)
            if decision.writes, case .success(let handOff) = decision.outcome {
                firstDecides.record(key, handOff)
                hashes[key] = input.contentHash
            }
            return decision
        }
    }

    private static func decideFirst<Merchant, Payload>(
        _ input: DecryptInput, existing: Existing?, merchant: Merchant, claimed: inout Set<String>, clock: VerificationClock,
        now: Date, newID: () -> UUID, verify: (PaymentJob, Merchant, Date) -> Result<Verified<Payload>, Rejection>
    ) -> Decision<Payload> {
        let key = input.key
        if let existing {
            guard existing.jobHash == input.contentHash else { return .reject(conflict(key)) }
            guard existing.status == .received else { return .handOff(HandOff(existing.status.stage, existing.message)) }
        }
        let settled: Settled<Payload>
        switch input {
        case .invalid(_, _, _, let reason, _, _):
            settled = .failed(Rejection(code: "invalid_job", reason: reason))
        case .job(let job, let publishedAt):
            let instant = clock.instant(publishedAt: publishedAt, firstReceivedAt: existing?.firstReceivedAt ?? now).instant
            switch verify(job, merchant, instant) {
            case .failure(let rejection):
                settled = .failed(rejection)
            case .success(let verified) where !claimed.insert(verified.transactionId).inserted:
                settled = .failed(Rejection(code: "token_replayed", reason: "token transactionId was already used by another payment"))
            case .success(let verified):
                settled = .decrypted(verified)
            }
        }
        if let existing { return .settle(existing, settled) }
        let job: PaymentJob? = if case .job(let job, _) = input { job } else { nil }
        return .create(NewPayment(id: newID(), key: key, jobHash: input.contentHash, job: job, settled: settled, trace: input.trace))
    }

    static func conflict(_ key: JobKey) -> StageFailure {
        .unattributable(
            code: "idempotency_conflict",
            reason: "job id '\(key.jobId)' of merchant '\(key.merchantId)' was already used for a job with different content")
    }
}

/// The instant a token's CMS signing time is judged against (Apple's step 4: "not too old").
///
/// The job's publish time, from the AMQP `timestamp` property the publisher sets, so a decrypt outage or backlog does
/// not fail every queued payment, and a dead letter replayed after a fix is judged as when it was first published.
/// RabbitMQ (3.10) stamps nothing itself: the publisher is trusted for this as it is for the amount, and the replay
/// guard on the token's `transactionId` keeps an old token from being used twice whatever its timestamp says.
///
/// A timestamp is accepted only within [first receipt − `maxQueueAge`, first receipt + `maxFutureSkew`]. Outside
/// that it is ignored, not a failure: first receipt is then the clock, exactly as for a job without a timestamp. A
/// publisher's wrong clock can thus never widen the window beyond those bounds, and never fails a payment that would
/// have passed without the property (the strictest clock decrypt has is first receipt).
public struct VerificationClock: Sendable, Equatable {
    /// `PAYPIPE_MAX_QUEUE_AGE` (default 24 h): how long before first receipt a publish time may be.
    public var maxQueueAge: TimeInterval
    /// `PAYPIPE_APPLEPAY_MAX_FUTURE_SKEW`: how long after first receipt a publish time may be (publisher clock skew).
    public var maxFutureSkew: TimeInterval

    public static let defaultMaxQueueAge: TimeInterval = 86_400

    public init(maxQueueAge: TimeInterval = Self.defaultMaxQueueAge, maxFutureSkew: TimeInterval = 60) {
        self.maxQueueAge = maxQueueAge
        self.maxFutureSkew = maxFutureSkew
    }

    /// What the instant was taken from.
    public enum Basis: Sendable, Equatable {
        case publishTimestamp
        case firstReceipt
        /// A timestamp was set but lies outside the accepted range.
        case firstReceiptTimestampIgnored
    }

    public func instant(publishedAt: Date?, firstReceivedAt: Date) -> (instant: Date, basis: Basis) {
        guard let publishedAt else { return (firstReceivedAt, .firstReceipt) }
        let earliest = firstReceivedAt.addingTimeInterval(-maxQueueAge)
        let latest = firstReceivedAt.addingTimeInterval(maxFutureSkew)
        guard earliest <= publishedAt, publishedAt <= latest else { return (firstReceivedAt, .firstReceiptTimestampIgnored) }
        return (publishedAt, .publishTimestamp)
    }
}
