import Foundation

/// Stage 2's decisions: decrypted payment → stored gateway request. Pure: the locked rows come in, and the stage
/// supplies `build` (the merchant's claims from the payment and its card data), so this holds the rules alone.
public enum Authorize {
    /// A payment the batch read locked, with whatever `build` needs of it (the record and its card data).
    public struct Locked<Row: Sendable>: Sendable {
        public let id: UUID
        public let merchantId: String
        public let jobId: String
        public let status: PaymentStatus
        public let row: Row

        public init(id: UUID, merchantId: String, jobId: String, status: PaymentStatus, row: Row) {
            (self.id, self.merchantId, self.jobId, self.status, self.row) = (id, merchantId, jobId, status, row)
        }

        public var message: StageMessage { StageMessage(paymentId: id, merchantId: merchantId, jobId: jobId) }
    }

    /// What `build` makes of a payment.
    public enum Built<Request: Sendable>: Sendable {
        case request(Request)
        /// The payment cannot be sent (an ``AuthorizeError``-style code): it ends `failed`.
        case rejected(Rejection)
        /// Something outside the payment failed (its card data does not open): the message's failure.
        case unavailable(StageFailure)
        /// A deferred payment (its job had `amountPending`) whose amount no completion has set yet: it waits.
        case awaitingAmount
    }

    public enum Decision<Request: Sendable>: Sendable {
        /// `decrypted → prepared`, storing the request.
        case prepare(StageMessage, Request)
        /// `decrypted → failed` with the rejection.
        case fail(StageMessage, Rejection)
        case handOff(HandOff)
        case reject(StageFailure)
        /// The payment waits for its amount: `decrypted → awaiting_amount` when `park` (else it already waits, or an
        /// earlier message of the batch parks it); handed to notify, which tells the merchant (`payment.awaiting_amount`)
        /// once: a redelivery hands it on again, and notify sends nothing twice.
        case awaitAmount(StageMessage, park: Bool)

        /// The hand-off to publish.
        public var outcome: Result<HandOff, StageFailure> {
            switch self {
            case .prepare(let message, _): .success(HandOff(.submit, message))
            case .fail(let message, _): .success(HandOff(.notify, message))
            case .handOff(let handOff): .success(handOff)
            case .reject(let failure): .failure(failure)
            case .awaitAmount(let message, _): .success(HandOff(.notify, message))
            }
        }
    }

    /// The batch's decisions, one per message, in order. A payment the read did not find is `unknown_payment`; one
    /// still `received` is a hand-off that overtook decrypt's commit (retried: `payment_not_decrypted`); one past
    /// `decrypted` is handed to where it is; a `decrypted` one is built for its merchant (`merchants`, keyed by id;
    /// `nil` when unknown, which `build` rejects as not configured) at `now`. A payment repeated in the batch is
    /// decided by its first message (``FirstDecides``).
    public static func decide<Row: Sendable, Merchant: Sendable, Request: Sendable>(
        _ rows: [UUID: Locked<Row>], _ messages: [StageMessage], merchants: [String: MerchantLookup<Merchant>], now: Date,
        build: (Locked<Row>, Merchant?, Date) -> Built<Request>
    ) -> [Decision<Request>] {
        var firstDecides = FirstDecides<UUID>()
        var parked: Set<UUID> = []
        return messages.map { message in
            if parked.contains(message.paymentId) { return .awaitAmount(message, park: false) }
            if let earlier = firstDecides.earlier(message.paymentId) { return .handOff(earlier) }
            let decision = decideFirst(rows[message.paymentId], message, merchants: merchants, now: now, build: build)
            switch decision {
            case .prepare, .fail:
                if case .success(let handOff) = decision.outcome { firstDecides.record(message.paymentId, handOff) }
            case .awaitAmount(_, let park):
                if park { parked.insert(message.paymentId) }
            case .handOff, .reject:
                break
            }
            return decision
        }
    }

    private static func decideFirst<Row, Merchant, Request>(
        _ locked: Locked<Row>?, _ message: StageMessage, merchants: [String: MerchantLookup<Merchant>], now: Date,
        build: (Locked<Row>, Merchant?, Date) -> Built<Request>
    ) -> Decision<Request> {
        guard let locked else {
            return .reject(.unattributable(code: "unknown_payment", reason: "payment \(message.paymentId) does not exist"))
        }
        switch locked.status {
        case .decrypted:
            break
        case .received:
            return .reject(.transient(code: "payment_not_decrypted", reason: "payment \(locked.id) is still received"))
        case .awaitingAmount:
            return .awaitAmount(locked.message, park: false)
        default:
            return .handOff(HandOff(locked.status.stage, locked.message))
        }
        let merchant: Merchant?
        switch merchants[locked.merchantId] ?? .unknown {
        case .found(let found): merchant = found
        case .unknown: merchant = nil
        case .unavailable(let failure): return .reject(failure)
        }
        switch build(locked, merchant, now) {
        case .request(let request): return .prepare(locked.message, request)
        case .rejected(let rejection): return .fail(locked.message, rejection)
        case .unavailable(let failure): return .reject(failure)
        case .awaitingAmount: return .awaitAmount(locked.message, park: true)
        }
    }
}
