import Foundation

/// The submit stage's exactly-once protocol as one pure value: from what a transaction read under the payment's
/// row lock (``Snapshot``: the payment, its latest AUTH attempt, the status queries since, the database clock) and,
/// after a call, the gateway's answer, it decides what to do, one payment at a time; ``SubmitDecision`` (below, in
/// this file) takes a whole batch's decisions with it. The database and the HTTP call only carry the decisions out
/// (`SubmitStage`'s apply, through `SubmitPlanStatement`/`SubmitRecordStatement`, which re-check the same guards in
/// SQL), so no rule is written twice. `SubmitProtocolTests` enumerate every interleaving of competing consumers
/// against it.
///
/// The rules it enforces:
/// - only the *current* attempt (the payment's latest AUTH attempt, still `sending` or `uncertain`, while the payment
///   is `submitting`) is ever settled; any other answer is evidence on its own attempt and never moves the payment;
/// - an open attempt is queried only after its `reconcile_after` (send deadline + total timeout + margin) on the
///   database clock, when its AUTH can no longer reach the gateway; only a query's "not found" (confirmed
///   `notFoundConfirmations` times, `confirmationSpacing` apart) lets a new AUTH be planned;
/// - nothing is sent after the payment deadline; a payment with an open attempt never fails, it goes to review.
public struct SubmitProtocol: Sendable, Equatable {
    /// Seconds after the payment was first received after which no AUTH is sent any more (`deadline_exceeded`).
    public var paymentDeadline: Double
    /// Inconclusive status queries tolerated before `needs_review`.
    public var maxInconclusiveQueries: Int
    /// "Not found" answers required before an attempt counts as never processed (`PAYPIPE_NOT_FOUND_CONFIRMATIONS`).
    public var notFoundConfirmations: Int
    /// Least time between two confirming "not found" queries.
    public static let confirmationSpacing: Double = 10

    public init(paymentDeadline: Double = 600, maxInconclusiveQueries: Int = 5, notFoundConfirmations: Int = 1) {
        self.paymentDeadline = paymentDeadline
        self.maxInconclusiveQueries = max(1, maxInconclusiveQueries)
        self.notFoundConfirmations = max(1, notFoundConfirmations)
    }

    /// An AUTH attempt as the protocol sees it.
    public struct Attempt: Sendable, Equatable, Hashable {
        public var id: Int64
        public var state: GatewayAttemptState
        /// When it may be queried (database clock).
        public var reconcileAfter: Date

        public init(id: Int64, state: GatewayAttemptState, reconcileAfter: Date) {
            self.id = id
            self.state = state
            self.reconcileAfter = reconcileAfter
        }

        public var isOpen: Bool { state == .sending || state == .uncertain }
    }

    /// Whether the merchant's gateway can be called now.
    public enum Gateway: Sendable, Equatable, Hashable {
        case ready
        case circuitOpen
        case notConfigured(String)
    }

    /// What a transaction read about one payment, under its row lock.
    public struct Snapshot: Sendable, Equatable, Hashable {
        public var status: PaymentStatus
        public var firstReceivedAt: Date
        /// The database's clock (`clock_timestamp()`), never a worker's.
        public var now: Date
        /// The payment's latest AUTH attempt.
        public var latest: Attempt?
        /// Inconclusive status queries since the latest attempt.
        public var inconclusiveQueries: Int
        /// "Not found" status queries since the latest attempt, and when the last one was made.
        public var notFoundQueries: Int
        public var lastNotFound: Date?
        public var gateway: Gateway
        /// Whether the gateway request to send is stored (and readable).
        public var requestStored: Bool

        public init(
            status: PaymentStatus, firstReceivedAt: Date, now: Date, latest: Attempt?, inconclusiveQueries: Int = 0,
            notFoundQueries: Int = 0, lastNotFound: Date? = nil, gateway: Gateway = .ready, requestStored: Bool = true
        ) {
            self.lastNotFound = lastNotFound
            self.status = status
            self.firstReceivedAt = firstReceivedAt
            self.now = now
            self.latest = latest
            self.inconclusiveQueries = inconclusiveQueries
            self.notFoundQueries = notFoundQueries
            self.gateway = gateway
            self.requestStored = requestStored
        }

        /// Whether an answer for attempt `id` may settle the payment.
        public func isCurrent(_ id: Int64) -> Bool {
            status == .submitting && latest?.id == id && latest?.isOpen == true
        }
    }

    /// The planning transaction's decision.
    public enum Plan: Sendable, Equatable, Hashable {
        /// Already terminal (its card data purged by the trigger): hand to notification again.
        case handOff
        /// Nothing to do now: retry the message later (payment unchanged), at `until` (on the snapshot's clock) when the
        /// wait's end is known: an attempt's reconciliation time, a confirming query's due time.
        case wait(code: String, reason: String, until: Date? = nil)
        /// End the payment without a call.
        case end(PaymentStatus, code: String, detail: String)
        /// Record a `sending` attempt, `prepared → submitting`, commit, then send the AUTH.
        case send
        /// Ask the gateway what became of the open attempt.
        case query(attemptId: Int64)
        /// `submitting` with no open attempt: nothing can be in flight, back to `prepared`, retry later.
        case rearm(detail: String)
    }

    /// What came back from a call (the facts only).
    public enum Answer: Sendable, Equatable {
        case sent(GatewayResult)
        case queried(TransactionQueryResult)
        /// The endpoint gate held the call back (`merchant_busy`: no call slot in this worker; `circuit_open`: the
        /// half-open circuit's trial was taken): the gateway was not asked.
        case notAsked(code: String, reason: String)
    }

    /// The recording transaction's decision.
    public enum Record: Sendable, Equatable {
        /// A final answer for the current attempt (sent, or adopted by a query): complete it and end the payment.
        case end(GatewayResult, TerminalDecision)
        /// No trustworthy answer: mark the attempt `uncertain` and reconcile it later.
        case uncertain(GatewayResult)
        /// Certainly not processed (refused before sending): mark it `not_sent`, back to `prepared`, plan again.
        case notSent(GatewayResult)
        /// The query confirmed the attempt was never processed: it becomes `not_sent`, back to `prepared`, plan again.
        case confirmedAbsent
        /// A "not found" that still needs confirming: recorded, retry later.
        case awaitConfirmation(found: Int)
        /// An inconclusive query within the budget: recorded, retry later.
        case inconclusive(count: Int, code: String, reason: String)
        /// The query budget is spent: a person must look.
        case review(count: Int, code: String, reason: String)
        /// Nothing was asked (the endpoint gate held the call back): retry later, no budget spent.
        case retry(code: String, reason: String)
        /// The answer is not for the current attempt: stored as evidence on its own attempt, the payment unchanged.
        /// `lateAuthorization`: the gateway authorised a payment PayPipe ended `failed` (a person must act).
        case evidence(GatewayResult?, lateAuthorization: Bool)
    }

    // MARK: Planning

    public func plan(_ snapshot: Snapshot) -> Plan {
        switch snapshot.status {
        case .authorized, .declined, .failed, .needsReview:
            return .handOff
        case .received, .decrypted, .awaitingAmount:
            return .wait(code: "payment_not_prepared", reason: "payment is still \(snapshot.status.rawValue)")
        case .prepared:
            return planPrepared(snapshot)
        case .submitting:
            return planSubmitting(snapshot)
        }
    }

    private func planPrepared(_ snapshot: Snapshot) -> Plan {
        if let latest = snapshot.latest, latest.isOpen {
            // Not reachable through the protocol (an attempt is closed before `prepared`); never send beside one.
            return .wait(code: "attempt_open", reason: "AUTH attempt \(latest.id) is \(latest.state.rawValue)")
        }
        if isPastDeadline(snapshot) {
            return .end(.failed, code: "deadline_exceeded", detail: "no AUTH sent: payment deadline of \(Int(paymentDeadline))s passed")
        }
        switch snapshot.gateway {
        case .notConfigured(let reason): return .end(.failed, code: "gateway_not_configured", detail: reason)
        case .circuitOpen: return .wait(code: "circuit_open", reason: "the gateway is failing; requests paused")
        case .ready: break
        }
        guard snapshot.requestStored else { return .end(.failed, code: "missing_gateway_request", detail: "no stored gateway request") }
        return .send
    }

    private func planSubmitting(_ snapshot: Snapshot) -> Plan {
        guard let attempt = snapshot.latest else { return .rearm(detail: "no attempt recorded") }
        switch attempt.state {
        case .notSent: return .rearm(detail: "AUTH attempt \(attempt.id) was not sent")
        case .completed:
            // An answer was recorded without ending the payment: never resend on top of it.
            return .end(.needsReview, code: "attempt_state_inconsistent", detail: "AUTH attempt \(attempt.id) completed while submitting")
        case .sending, .uncertain: break
        }
        guard snapshot.now >= attempt.reconcileAfter else {
            return .wait(code: "awaiting_reconciliation",
                         reason: "AUTH attempt \(attempt.id) may still be in flight; query after \(attempt.reconcileAfter)", until: attempt.reconcileAfter)
        }
        switch snapshot.gateway {
        case .notConfigured(let reason):
            // An AUTH may be outstanding and cannot be asked about: a person must look.
            return .end(.needsReview, code: "gateway_not_configured", detail: "\(reason); AUTH attempt \(attempt.id) unresolved")
        case .circuitOpen: return .wait(code: "circuit_open", reason: "the gateway is failing; requests paused")
        case .ready: break
        }
        if let last = snapshot.lastNotFound, snapshot.now < last.addingTimeInterval(Self.confirmationSpacing) {
            let due = last.addingTimeInterval(Self.confirmationSpacing)
            return .wait(code: "awaiting_confirmation", reason: "a second 'not found' for AUTH attempt \(attempt.id) is due after \(due)", until: due)
        }
        return .query(attemptId: attempt.id)
    }

    func isPastDeadline(_ snapshot: Snapshot) -> Bool {
        snapshot.now.timeIntervalSince(snapshot.firstReceivedAt) > paymentDeadline
    }

    /// Whether the reconciler may fail a payment stuck before submitting (`decrypted`/`prepared`) for its deadline:
    /// only when no attempt can be in flight and the last one's reconciliation time has passed.
    public func mayExpire(_ snapshot: Snapshot) -> Bool {
        guard snapshot.status == .decrypted || snapshot.status == .prepared, isPastDeadline(snapshot) else { return false }
        guard let latest = snapshot.latest else { return true }
        return !latest.isOpen && snapshot.now >= latest.reconcileAfter
    }

    // MARK: Recording

    /// Decides what an answer for attempt `attemptId` does, given the snapshot re-read under the row lock.
    public func record(_ answer: Answer, attemptId: Int64, snapshot: Snapshot) -> Record {
        if case .notAsked(let code, let reason) = answer { return .retry(code: code, reason: reason) }
        guard snapshot.isCurrent(attemptId) else {
            let evidence: GatewayResult? = switch answer {
            case .sent(let result): result
            case .queried(.found(let result)): result
            case .queried, .notAsked: nil
            }
            let late = snapshot.status == .failed && evidence?.outcome == .authorized
            return .evidence(evidence, lateAuthorization: late)
        }
        switch answer {
        case .sent(let result):
            switch result.outcome {
            case .authorized, .declined, .permanentError, .needsReview: return .end(result, TerminalDecision(result))
            case .uncertain: return .uncertain(result)
            case .transient: return .notSent(result)
            }
        case .queried(.found(let result)):
            return .end(result, TerminalDecision(result))
        case .queried(.notFound):
            let found = snapshot.notFoundQueries + 1
            return found >= notFoundConfirmations ? .confirmedAbsent : .awaitConfirmation(found: found)
        case .queried(.inconclusive(let code, let reason)):
            let count = snapshot.inconclusiveQueries + 1
            return count >= maxInconclusiveQueries
                ? .review(count: count, code: code, reason: reason) : .inconclusive(count: count, code: code, reason: reason)
        case .notAsked:
            preconditionFailure("handled above")
        }
    }
}

/// The state of one gateway attempt (`gateway_attempts.state`), as the submit protocol reasons about it.
public enum GatewayAttemptState: String, Sendable {
    /// Committed before the call: the request may be on the wire. Found on redelivery, it means a crash
    /// between sending and recording, so the gateway must be queried before anything is resent.
    case sending
    case completed
    /// Sent, but no trustworthy answer: to be resolved by the connector's status query.
    case uncertain
    /// Known not to have been processed: the request may be sent again.
    case notSent = "not_sent"
}

/// The terminal status, error code and audit detail a final gateway answer gives a payment.
///
/// Why a type: the protocol's ending (`SubmitProtocol.Record.end`) carries it, and the ending statement
/// (`SubmitRecordStatement`) writes the payment's columns and audit row from it, so the two cannot differ.
public struct TerminalDecision: Sendable, Equatable {
    public let status: PaymentStatus
    public let errorCode: String?
    public let detail: String?

    /// Any answer taken as final: `uncertain` and `transient` ones (an adopted query result) end `failed`.
    public init(_ result: GatewayResult) {
        switch result.outcome {
        case .authorized:
            self.init(status: .authorized, errorCode: nil, detail: result.transactionReference.map { "transaction \($0)" })
        case .declined:
            self.init(status: .declined, errorCode: result.failureCode, detail: result.failureDetail)
        case .needsReview:
            self.init(status: .needsReview, errorCode: result.failureCode, detail: result.failureDetail)
        case .permanentError, .uncertain, .transient:
            self.init(status: .failed, errorCode: result.failureCode, detail: result.failureDetail)
        }
    }

    private init(status: PaymentStatus, errorCode: String?, detail: String?) {
        self.status = status
        self.errorCode = errorCode
        self.detail = detail
    }

    /// Whether a just-sent AUTH's answer ends the payment at once (the others are retried or reconciled).
    public static func endsPayment(_ outcome: GatewayOutcome) -> Bool {
        switch outcome {
        case .authorized, .declined, .permanentError, .needsReview: true
        case .uncertain, .transient: false
        }
    }
}

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
