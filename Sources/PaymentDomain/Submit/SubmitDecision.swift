import Foundation

/// The submit stage's batch decisions, pure: the batch read (every payment of the batch under its row lock, with its
/// latest AUTH attempt and the status queries since, and the database's time read once for the batch) comes in as
/// data, ``SubmitProtocol`` decides each payment, and the stage applies the decisions. One decide for any batch size,
/// a batch of one included; `SubmitDecisionTests` drive it with an injected clock.
public enum SubmitDecision {
    /// A payment as the batch read found it under its row lock.
    public struct Locked: Sendable, Equatable {
        public var status: PaymentStatus
        public var firstReceivedAt: Date
        /// The payment's latest AUTH attempt (status queries excluded).
        public var latest: SubmitProtocol.Attempt?
        /// Inconclusive and "not found" status queries since the latest attempt, and when the last "not found" was made.
        public var inconclusiveQueries: Int
        public var notFoundQueries: Int
        public var lastNotFound: Date?
        /// Whether the gateway request to send is stored and readable.
        public var requestStored: Bool

        public init(status: PaymentStatus, firstReceivedAt: Date, latest: SubmitProtocol.Attempt? = nil, inconclusiveQueries: Int = 0,
                    notFoundQueries: Int = 0, lastNotFound: Date? = nil, requestStored: Bool = true) {
            (self.status, self.firstReceivedAt, self.latest) = (status, firstReceivedAt, latest)
            (self.inconclusiveQueries, self.notFoundQueries, self.lastNotFound, self.requestStored) =
                (inconclusiveQueries, notFoundQueries, lastNotFound, requestStored)
        }

        /// The protocol's view at `now` (the batch's database time).
        public func snapshot(now: Date, gateway: SubmitProtocol.Gateway = .ready) -> SubmitProtocol.Snapshot {
            SubmitProtocol.Snapshot(
                status: status, firstReceivedAt: firstReceivedAt, now: now, latest: latest, inconclusiveQueries: inconclusiveQueries,
                notFoundQueries: notFoundQueries, lastNotFound: lastNotFound, gateway: gateway, requestStored: requestStored)
        }
    }

    /// One message's planning decision.
    public enum Planned: Sendable, Equatable {
        /// No such payment.
        case unknown
        /// The payment's first message of the batch: the protocol's plan, on this snapshot.
        case plan(SubmitProtocol.Plan, SubmitProtocol.Snapshot)
        /// A later message for a payment the first message ends or hands off: hand it to notification too.
        case handOff
        /// A later message for a payment the first message sends an AUTH or a status query for: its answer is the
        /// first message's business; this one waits like any message beside an attempt in flight.
        case inFlight
        /// A later message for a payment the first message leaves as it is (a wait) or re-arms: the same result.
        case sameAs(Int)
    }

    /// The batch's planning decisions, one per message (by payment id), in order. `gateways`: whether each payment's
    /// gateway can be called (absent: ready; only `prepared` and `submitting` payments need one). As in every stage, a
    /// payment's first message decides and the later ones are already handled by it.
    public static func plan(
        _ paymentIds: [UUID], locked: [UUID: Locked], now: Date, gateways: [UUID: SubmitProtocol.Gateway], machine: SubmitProtocol
    ) -> [Planned] {
        var first: [UUID: (index: Int, plan: SubmitProtocol.Plan)] = [:]
        return paymentIds.enumerated().map { index, id in
            guard let payment = locked[id] else { return .unknown }
            if let earlier = first[id] {
                switch earlier.plan {
                case .handOff, .end: return .handOff
                case .send, .query: return .inFlight
                case .wait, .rearm: return .sameAs(earlier.index)
                }
            }
            let snapshot = payment.snapshot(now: now, gateway: gateways[id] ?? .ready)
            let plan = machine.plan(snapshot)
            first[id] = (index, plan)
            return .plan(plan, snapshot)
        }
    }

    /// One call's answer to record.
    public struct Answered: Sendable, Equatable {
        public var paymentId: UUID
        public var attemptId: Int64
        public var answer: SubmitProtocol.Answer

        public init(paymentId: UUID, attemptId: Int64, answer: SubmitProtocol.Answer) {
            (self.paymentId, self.attemptId, self.answer) = (paymentId, attemptId, answer)
        }
    }

    /// The batch's recording decisions, one per answer (`nil`: no such payment), each on the payment as the record
    /// transaction's read found it at `now`.
    public static func record(_ answers: [Answered], locked: [UUID: Locked], now: Date, machine: SubmitProtocol) -> [SubmitProtocol.Record?] {
        answers.map { answered in
            locked[answered.paymentId].map { machine.record(answered.answer, attemptId: answered.attemptId, snapshot: $0.snapshot(now: now)) }
        }
    }
}
