import Foundation

/// The money lifecycle's rules as one pure value (docs/operations-lifecycle.md): from what a transaction read under
/// the payment's row lock (``Snapshot``) and an operation request, it decides what to send to the gateway and what the
/// lifecycle becomes if the gateway confirms it, or why the operation is refused or must wait. A worker only carries
/// the decision out (the attempt protocol: a committed attempt before the call, reconciliation before any resend).
///
/// The rules it enforces:
/// - an `operationId` is used once per merchant: the same content again is the earlier operation (never a second
///   gateway call), other content is a conflict;
/// - operations need a transport that takes them (``Transport/Operations/refused(reason:lateVoid:)`` says why not);
/// - one operation of a payment at a time: an open one's amount is unknown until it is reconciled;
/// - one capture per authorisation, never above the authorised amount; refunds never above what is refundable;
/// - at a settlement-updates processor, an update only while the AUTH is pending or suspended
///   (``SettlementState/isUpdatable``), a refund only once it is settled; a refund before settlement is a void (all
///   of it) or a lower amount to settle (part of it).
public struct OperationProtocol: Sendable, Equatable {
    public init() {}

    /// How the merchant's processor takes operations, as data its connector declares (in its folder
    /// `Connectors/<Name>/`): the rules reason about these capabilities, never about a processor.
    /// ``otherConnector`` is a processor the rules do not speak (its operations are refused).
    public struct Transport: Sendable, Hashable {
        /// What an operation is at the processor.
        public enum Operations: Sendable, Hashable {
            /// Capture and void update the AUTH's settlement state (a settlement update); a refund is a new transaction of the settled
            /// AUTH, whose lost answer no query can find.
            case settlementUpdates
            /// The processor's own capture, reversal and refund of its payment, each found again by its status query.
            case processorOperations
            /// None is carried out: `reason` follows the operation's name in its refusal; `lateVoid` says why a late
            /// AUTH is not voided automatically.
            case refused(reason: String, lateVoid: String)
        }

        /// The processor's name, in refusals and reviews.
        public var name: String
        public var operations: Operations
        /// Whether a capture may take less than the authorisation (the rest released).
        public var capturesPartially: Bool
        /// Whether an uncaptured authorisation can be cancelled.
        public var voids: Bool
        /// What an automatically captured authorisation is at the processor (a late one is reviewed: a refund is due).
        public var capturedAuthorization: String
        /// What the processor calls each request and its status query.
        public var requestNames: RequestNames

        public init(name: String, operations: Operations, capturesPartially: Bool = true, voids: Bool = true,
                    capturedAuthorization: String = "authorisation", requestNames: RequestNames = .neutral) {
            self.name = name
            self.operations = operations
            self.capturesPartially = capturesPartially
            self.voids = voids
            self.capturedAuthorization = capturedAuthorization
            self.requestNames = requestNames
        }

        /// The names a processor gives an operation's requests (``GatewayOperation``) and its status query, under which
        /// they are stored (`request_type`) and reported (`paypipe payment show`): data its connector declares.
        public struct RequestNames: Sendable, Hashable {
            public var capture: String
            public var void: String
            public var lowerCapture: String
            public var hold: String
            public var refund: String
            public var query: String

            public init(capture: String, void: String, lowerCapture: String, hold: String, refund: String, query: String) {
                (self.capture, self.void, self.lowerCapture, self.hold, self.refund, self.query) = (capture, void, lowerCapture, hold, refund, query)
            }

            /// The names of a processor that declares none (its operations are refused, so none is ever stored).
            public static let neutral = RequestNames(capture: "capture", void: "void", lowerCapture: "lower_capture", hold: "hold",
                                                     refund: "refund", query: "query")

            public func name(of operation: GatewayOperation) -> String {
                switch operation {
                case .capture: capture
                case .void: void
                case .lowerCapture: lowerCapture
                case .hold: hold
                case .refund: refund
                }
            }
        }

        /// A connector whose operations are captures, reversals and refunds of its own (not settle-status updates).
        public var isConnector: Bool { operations == .processorOperations }

        /// A processor the rules do not speak: every operation is refused.
        public static let otherConnector = Transport(
            name: "another connector",
            operations: .refused(reason: "is not carried out for this merchant's gateway (docs/connectors.md)",
                                 lateVoid: "voids are not carried out for this merchant's gateway"))
    }

    /// An operation already recorded under the same merchant and `operationId`.
    public struct Record: Sendable, Equatable, Hashable {
        public enum Status: String, Sendable, Hashable, CaseIterable {
            case requested, succeeded, failed
        }

        public var operationId: String
        public var kind: OperationRequest.Kind
        public var contentHash: [UInt8]
        public var status: Status
        /// The failure code of a failed operation.
        public var code: String?

        public init(operationId: String, kind: OperationRequest.Kind, contentHash: [UInt8], status: Status, code: String? = nil) {
            self.operationId = operationId
            self.kind = kind
            self.contentHash = contentHash
            self.status = status
            self.code = code
        }
    }

    /// What the gateway is known to hold for the payment's AUTH.
    public struct GatewayFacts: Sendable, Equatable, Hashable {
        public var transactionReference: String
        public var settleStatus: SettlementState

        public init(transactionReference: String, settleStatus: SettlementState) {
            self.transactionReference = transactionReference
            self.settleStatus = settleStatus
        }
    }

    /// What a transaction read, under the payment's row lock.
    public struct Snapshot: Sendable, Equatable, Hashable {
        public var transport: Transport
        /// The AUTH pipeline's status.
        public var paymentStatus: PaymentStatus
        /// Present once the payment is `authorized`.
        public var lifecycle: MoneyLifecycle?
        /// The merchant's operation with the request's `operationId`, on any payment.
        public var existing: Record?
        /// Another operation of this payment still `requested` (its gateway attempt may be in flight), or for review.
        public var openOperation: String?
        /// Whether ``openOperation`` is for review (an operator resolves it; nothing ends it by itself).
        public var openOperationForReview: Bool
        /// The database's clock.
        public var now: Date

        public init(transport: Transport, paymentStatus: PaymentStatus, lifecycle: MoneyLifecycle?, existing: Record? = nil,
                    openOperation: String? = nil, openOperationForReview: Bool = false, now: Date) {
            self.openOperationForReview = openOperationForReview
            self.transport = transport
            self.paymentStatus = paymentStatus
            self.lifecycle = lifecycle
            self.existing = existing
            self.openOperation = openOperation
            self.now = now
        }
    }

    /// What a gateway call, once confirmed, does to the payment, and the event reporting it.
    public struct Effect: Sendable, Equatable, Hashable {
        public enum Event: String, Sendable, Hashable, CaseIterable {
            case captured = "payment.captured"
            case voided = "payment.voided"
            case refunded = "payment.refunded"
        }

        public var lifecycle: MoneyLifecycle
        /// What the gateway did, which a refund before settlement makes differ from what was requested.
        public var event: Event
        /// The amount the event reports: captured (or left captured), voided, or refunded by this operation.
        public var amount: Int64

        public init(lifecycle: MoneyLifecycle, event: Event, amount: Int64) {
            self.lifecycle = lifecycle
            self.event = event
            self.amount = amount
        }
    }

    public enum Decision: Sendable, Equatable, Hashable {
        /// The same operation again: its record stands (a `requested` one is resumed by its own attempts, a
        /// finished one re-reported); nothing is sent.
        case duplicate(Record)
        /// The `operationId` was used with other content: dead-lettered (`operation_conflict`), the first untouched.
        case conflict(Record)
        /// Not now: retried later, nothing recorded as failed.
        case wait(code: String, reason: String)
        /// Refused without a call: the operation is recorded `failed` with the code and reported.
        case refuse(code: String, reason: String)
        /// Record the operation and a `sending` attempt, commit, then send; on the gateway's confirmation apply `effect`.
        case send(GatewayOperation, effect: Effect)

        /// The failure code the decision carries (a conflict's, a wait's or a refusal's).
        public var code: String? {
            switch self {
            case .duplicate, .send: nil
            case .conflict: "operation_conflict"
            case .wait(let code, _), .refuse(let code, _): code
            }
        }
    }

    // MARK: Deciding

    public func decide(_ request: OperationRequest, _ snapshot: Snapshot, gateway: GatewayFacts?) -> Decision {
        if let existing = snapshot.existing {
            return existing.contentHash == request.contentHash ? .duplicate(existing) : .conflict(existing)
        }
        if case .refused(let reason, _) = snapshot.transport.operations {
            return .refuse(code: "operation_not_supported", reason: "\(request.kind.rawValue) \(reason)")
        }
        switch snapshot.paymentStatus {
        case .received, .decrypted, .awaitingAmount, .prepared, .submitting:
            return .wait(code: "awaiting_authorization", reason: "the payment is still \(snapshot.paymentStatus.rawValue)")
        case .declined, .failed, .needsReview:
            return .refuse(code: "payment_not_authorized", reason: "the payment is \(snapshot.paymentStatus.rawValue)")
        case .authorized:
            break
        }
        guard let lifecycle = snapshot.lifecycle, let gateway else {
            return .refuse(code: "lifecycle_inconsistent", reason: "an authorized payment without its lifecycle or gateway reference")
        }
        if let open = snapshot.openOperation {
            // Waiting for an operation for review would only run out of retries: only an operator ends it.
            if snapshot.openOperationForReview {
                return .refuse(code: "operation_under_review", reason: "operation \(open) of this payment is for review: an operator resolves it first")
            }
            return .wait(code: "operation_in_progress", reason: "operation \(open) of this payment is not finished")
        }
        if lifecycle.status == .voided {
            return .refuse(code: "payment_voided", reason: "the payment was voided")
        }
        if snapshot.transport.isConnector {
            return connectorDecision(request, lifecycle, gateway, transport: snapshot.transport, now: snapshot.now)
        }
        if gateway.settleStatus == .cancelled {
            return .refuse(code: "authorization_cancelled", reason: "the gateway reports the AUTH cancelled")
        }
        // The settlement poll may not have recorded a settlement the gateway already reported.
        var current = lifecycle
        if current.status == .captured, gateway.settleStatus == .settled { current.status = .settled }
        // Settlement is only ever learnt from the gateway; a settled record it now contradicts is not acted on.
        if current.status.isSettled, gateway.settleStatus != .settled {
            if case .other(let text) = gateway.settleStatus {
                return .wait(code: "gateway_settlestatus_unknown", reason: "unknown settlement state \(text): reconciled by a status query first")
            }
            return .refuse(code: "lifecycle_inconsistent",
                           reason: "the payment is \(current.status.rawValue) but the gateway reports its settlement \(gateway.settleStatus)")
        }
        switch request.kind {
        case .capture: return capture(request.amount, current, gateway, now: snapshot.now)
        case .void: return void(current, gateway)
        case .refund: return refund(request.amount, current, gateway)
        }
    }

    /// Why a capture of `captured` cannot be made whatever the gateway (one per authorisation, within `captureWithin`,
    /// never above the authorised amount), or nil.
    private func captureRefusal(_ captured: Int64, _ lifecycle: MoneyLifecycle, now: Date) -> Decision? {
        guard lifecycle.status == .authorized else {
            let how = lifecycle.captureMode == .automatic ? "captured automatically by its AUTH" : "already captured"
            return .refuse(code: "already_captured", reason: "the payment was \(how); one capture per authorisation")
        }
        if let deadline = lifecycle.captureDeadline, now >= deadline {
            return .refuse(code: "authorization_expired", reason: "captureWithin ended at \(deadline)")
        }
        guard captured <= lifecycle.authorizedAmount else {
            return .refuse(code: "amount_exceeds_authorized",
                           reason: "capture of \(captured) exceeds the authorised \(lifecycle.authorizedAmount)")
        }
        return nil
    }

    /// Why nothing can be refunded whatever the gateway (nothing captured, all refunded, voided), or nil.
    private func refundRefusal(_ lifecycle: MoneyLifecycle) -> Decision? {
        switch lifecycle.status {
        case .authorized:
            .refuse(code: "payment_not_captured", reason: "nothing is captured yet: void the authorisation instead")
        case .refunded:
            .refuse(code: "amount_exceeds_refundable", reason: "the payment is refunded in full; nothing is left to refund")
        case .voided:
            .refuse(code: "payment_voided", reason: "the payment was voided")
        case .captured, .settled, .partiallyRefunded:
            nil
        }
    }

    private func capture(_ amount: Int64?, _ lifecycle: MoneyLifecycle, _ gateway: GatewayFacts, now: Date) -> Decision {
        let captured = amount ?? lifecycle.authorizedAmount
        if let refusal = captureRefusal(captured, lifecycle, now: now) { return refusal }
        if let wait = unlessUpdatable(gateway, forSettled: "a suspended AUTH the gateway reports settled") { return wait }
        var after = lifecycle
        after.status = .captured
        after.capturedAmount = captured
        // A partial capture sets the amount and releases the rest in the same update.
        let base = captured < lifecycle.authorizedAmount ? captured : nil
        return .send(.capture(transactionReference: gateway.transactionReference, amount: base),
                     effect: Effect(lifecycle: after, event: .captured, amount: captured))
    }

    private func void(_ lifecycle: MoneyLifecycle, _ gateway: GatewayFacts) -> Decision {
        guard !lifecycle.status.isSettled else {
            return .refuse(code: "payment_settled", reason: "the payment is \(lifecycle.status.rawValue): refund it instead")
        }
        if gateway.settleStatus == .settling {
            return .refuse(code: "payment_settled", reason: "settlement is in progress: refund it once settled")
        }
        if let wait = unlessUpdatable(gateway, forSettled: nil) { return wait }
        return .send(voidUpdate(gateway), effect: voidEffect(lifecycle))
    }

    private func refund(_ amount: Int64?, _ lifecycle: MoneyLifecycle, _ gateway: GatewayFacts) -> Decision {
        switch lifecycle.status {
        case .authorized, .refunded, .voided:
            // Refused whatever the gateway holds (``refundRefusal(_:)`` has a refusal for each).
            return refundRefusal(lifecycle)!
        case .captured:
            // Not settled: the gateway refuses a refund, so the captured amount is lowered, or all of it voided.
            if gateway.settleStatus == .settling {
                return .wait(code: "awaiting_settlement", reason: "settlement is in progress: the refund waits for it")
            }
            let refunded = amount ?? lifecycle.capturedAmount
            guard refunded <= lifecycle.capturedAmount else {
                return .refuse(code: "amount_exceeds_refundable", reason: "refund of \(refunded) exceeds the captured \(lifecycle.capturedAmount)")
            }
            if let wait = unlessUpdatable(gateway, forSettled: nil) { return wait }
            if refunded == lifecycle.capturedAmount { return .send(voidUpdate(gateway), effect: voidEffect(lifecycle)) }
            var after = lifecycle
            after.capturedAmount -= refunded
            return .send(.lowerCapture(transactionReference: gateway.transactionReference, amount: after.capturedAmount),
                         effect: Effect(lifecycle: after, event: .captured, amount: after.capturedAmount))
        case .settled, .partiallyRefunded:
            // The amount always: a refund without one refunds an amount no source states for a parent whose amount
            // to settle was lowered, and reconciling a lost refund answer matches on it.
            return refundSettled(amount, lifecycle, gateway)
        }
    }

    /// A refund of a settled payment (after settlement, any connector): at most what is left, a refund of its amount.
    private func refundSettled(_ amount: Int64?, _ lifecycle: MoneyLifecycle, _ gateway: GatewayFacts) -> Decision {
        let refundable = lifecycle.refundable
        let refunded = amount ?? refundable
        guard refunded <= refundable else {
            return .refuse(code: "amount_exceeds_refundable",
                           reason: "refund of \(refunded) exceeds the \(refundable) left of the settled \(lifecycle.capturedAmount)")
        }
        var after = lifecycle
        after.refundedAmount += refunded
        after.status = after.refundedAmount == after.capturedAmount ? .refunded : .partiallyRefunded
        return .send(.refund(parentTransactionReference: gateway.transactionReference, amount: refunded),
                     effect: Effect(lifecycle: after, event: .refunded, amount: refunded))
    }

    /// The rules of processors whose operations are their own (``Transport/Operations/processorOperations``,
    /// docs/connectors.md per connector). Their captures, reversals and refunds are requests of their own on the
    /// processor's payment, not updates of its settle status: a capture takes the authorisation (partly or fully, the
    /// rest released, where ``Transport/capturesPartially``; else all of it); a void cancels an uncaptured
    /// authorisation (where ``Transport/voids``); a refund needs the payment settled, which the worker learns from the
    /// connector before it decides.
    private func connectorDecision(
        _ request: OperationRequest, _ lifecycle: MoneyLifecycle, _ gateway: GatewayFacts, transport: Transport, now: Date
    ) -> Decision {
        let name = transport.name
        switch request.kind {
        case .capture:
            let captured = request.amount ?? lifecycle.authorizedAmount
            if let refusal = captureRefusal(captured, lifecycle, now: now) { return refusal }
            guard captured == lifecycle.authorizedAmount || transport.capturesPartially else {
                return .refuse(code: "partial_capture_not_supported",
                               reason: "\(name) captures the whole authorisation only (\(lifecycle.authorizedAmount)); capture it in full, then refund part of it")
            }
            var after = lifecycle
            after.status = .captured
            after.capturedAmount = captured
            return .send(.capture(transactionReference: gateway.transactionReference, amount: captured),
                         effect: Effect(lifecycle: after, event: .captured, amount: captured))
        case .void:
            guard transport.voids else {
                return .refuse(code: "operation_not_supported", reason: "\(name) has no void API: refund a captured payment instead")
            }
            guard lifecycle.status == .authorized else {
                return .refuse(code: "payment_settled", reason: "the payment is \(lifecycle.status.rawValue) at \(name) (captured): refund it instead")
            }
            return .send(.void(transactionReference: gateway.transactionReference), effect: voidEffect(lifecycle))
        case .refund:
            switch lifecycle.status {
            case .authorized, .refunded, .voided:
                return refundRefusal(lifecycle)!
            case .captured:
                return .wait(code: "awaiting_settlement", reason: "\(name) has not reported the capture yet: the refund waits for it")
            case .settled, .partiallyRefunded:
                return refundSettled(request.amount, lifecycle, gateway)
            }
        }
    }

    /// Nil when a settlement update may be sent; otherwise what to do instead.
    private func unlessUpdatable(_ gateway: GatewayFacts, forSettled inconsistency: String?) -> Decision? {
        switch gateway.settleStatus {
        case .pendingSettlement, .pendingManualSettlement, .suspended:
            return nil
        case .other(let text):
            return .wait(code: "gateway_settlestatus_unknown", reason: "unknown settlement state \(text): reconciled by a status query first")
        case .settling:
            return .wait(code: "awaiting_settlement", reason: "settlement is in progress")
        case .settled:
            return .refuse(code: "lifecycle_inconsistent", reason: inconsistency ?? "the gateway reports the AUTH settled")
        case .cancelled:
            return .refuse(code: "authorization_cancelled", reason: "the gateway reports the AUTH cancelled")
        }
    }

    private func voidUpdate(_ gateway: GatewayFacts) -> GatewayOperation {
        .void(transactionReference: gateway.transactionReference)
    }

    private func voidEffect(_ lifecycle: MoneyLifecycle) -> Effect {
        var after = lifecycle
        after.status = .voided
        after.capturedAmount = 0
        return Effect(lifecycle: after, event: .voided, amount: lifecycle.status == .authorized ? lifecycle.authorizedAmount : lifecycle.capturedAmount)
    }

    // MARK: Expiry

    /// The automatic void of a manual authorisation not captured within `captureWithin`: nil while it is not due (not
    /// manual, captured, voided, not yet expired) or while another operation is open; otherwise the void to send, or
    /// why it cannot be sent now.
    public func expiry(_ snapshot: Snapshot, gateway: GatewayFacts?) -> Decision? {
        guard snapshot.paymentStatus == .authorized, let lifecycle = snapshot.lifecycle, lifecycle.status == .authorized,
              let deadline = lifecycle.captureDeadline, snapshot.now >= deadline, snapshot.openOperation == nil, let gateway else {
            return nil
        }
        switch snapshot.transport.operations {
        case .settlementUpdates:
            break
        case .processorOperations where snapshot.transport.voids:
            return .send(.void(transactionReference: gateway.transactionReference), effect: voidEffect(lifecycle))
        case .processorOperations:
            // Not refunded instead: a refund of a payment never captured is not documented (it may not release the
            // hold, or may be refused), and the customer was not charged: with no automatic capture the
            // authorisation lapses at the issuer. Reported, so the merchant knows it will never be captured (captures
            // are refused from now on: authorization_expired).
            let name = snapshot.transport.name
            return .refuse(code: "operation_not_supported",
                           reason: "\(name) has no void API: the uncaptured authorisation is never captured and lapses at the issuer (or is released in the \(name) Portal)")
        case .refused:
            return .refuse(code: "operation_not_supported", reason: "the expiry void needs the webservices transport")
        }
        if let instead = unlessUpdatable(gateway, forSettled: "an expired, uncaptured AUTH the gateway reports settled") { return instead }
        return .send(voidUpdate(gateway), effect: voidEffect(lifecycle))
    }
}

// MARK: Reconciling a lost answer

extension OperationProtocol {
    /// The AUTH as its processor's status query by its transaction reference returned it.
    public struct QueriedAuth: Sendable, Equatable, Hashable {
        public var settleStatus: SettlementState
        /// The amount to settle, when the record carries one.
        public var settleBaseAmount: Int64?

        public init(settleStatus: SettlementState, settleBaseAmount: Int64?) {
            self.settleStatus = settleStatus
            self.settleBaseAmount = settleBaseAmount
        }
    }

    public enum Reconciliation: Sendable, Equatable, Hashable {
        /// The request took effect: apply its effect; it is never sent again.
        case tookEffect
        /// The AUTH is exactly as before the request: it was not applied, and may be sent again by a new attempt.
        case notApplied
        /// The query cannot tell: query again later (the attempt protocol bounds how often, then review).
        case inconclusive(code: String, reason: String)
        /// Neither before nor after, or not knowable: a person must look; nothing is sent again.
        case review(code: String, reason: String)

        public var code: String? {
            switch self {
            case .tookEffect, .notApplied: nil
            case .inconclusive(let code, _), .review(let code, _): code
            }
        }
    }

    /// What a status query says about `operation`, sent from lifecycle `before` with `effect` expected, whose answer
    /// was lost. Only a settlement update can be reconciled this way: the AUTH's own settlement state and amount to
    /// settle show whether it took effect. A refund is a new transaction, and no source confirms a query
    /// filter that finds it by its parent (docs/connectors.md): it is never resent automatically.
    public func reconcile(_ operation: GatewayOperation, before: MoneyLifecycle, effect: Effect, queried: QueriedAuth?) -> Reconciliation {
        guard let (settle, base) = operation.settlementUpdate else {
            return .review(code: "refund_outcome_unknown",
                           reason: "a refund's answer was lost and no confirmed query finds it: never resent automatically")
        }
        guard let queried else {
            return .inconclusive(code: "reconciliation_inconclusive", reason: "the query returned no AUTH record")
        }
        if case .other(let text) = queried.settleStatus {
            return .inconclusive(code: "reconciliation_inconclusive", reason: "settle status \(text)")
        }
        // The AUTH's amount to settle before the update: the authorised amount until a capture lowered it.
        let previousAmount = before.status == .authorized ? before.authorizedAmount : before.capturedAmount
        let state = "settlement \(queried.settleStatus), amount to settle \(queried.settleBaseAmount.map(String.init) ?? "absent")"
        func unexpected() -> Reconciliation {
            .review(code: "operation_state_unexpected", reason: "the AUTH is neither as before nor as after the update: \(state)")
        }
        switch settle {
        case .cancelled?:
            if queried.settleStatus == .cancelled { return .tookEffect }
            return queried.settleStatus.isUpdatable ? .notApplied : unexpected()
        case .pendingSettlement?:
            // A capture: suspended → released (and settling or settled since), at the captured amount when one was sent.
            let released: Set<SettlementState> = [.pendingSettlement, .settling, .settled]
            let amountBefore = queried.settleBaseAmount.map { $0 == previousAmount } ?? true
            // Still suspended: the release did not happen. Were only the amount applied, sending the same absolute
            // values again sets nothing new.
            if queried.settleStatus == .suspended, amountBefore { return .notApplied }
            if base != nil, queried.settleBaseAmount == nil {
                return .inconclusive(code: "reconciliation_inconclusive", reason: "the AUTH record has no amount to settle: \(state)")
            }
            let amountAfter = base.map { queried.settleBaseAmount == $0 } ?? (queried.settleBaseAmount.map { $0 == previousAmount } ?? true)
            if released.contains(queried.settleStatus), amountAfter { return .tookEffect }
            return unexpected()
        case nil:
            // A lower amount to settle alone (a refund before settlement).
            guard let base, let amount = queried.settleBaseAmount else {
                return .inconclusive(code: "reconciliation_inconclusive", reason: "the AUTH record has no amount to settle: \(state)")
            }
            if amount == base, queried.settleStatus != .cancelled { return .tookEffect }
            if amount == previousAmount, queried.settleStatus.isUpdatable { return .notApplied }
            return unexpected()
        case .suspended?, .pendingManualSettlement?, .settling?, .settled?, .other?:
            // Operations never send these (a suspension follows the AUTH, outside the lifecycle).
            return settle == queried.settleStatus ? .tookEffect : unexpected()
        }
    }
}

// MARK: Reconciling another connector's lost answer

extension OperationProtocol {
    /// What a processor's status query shows about an operation whose answer was lost, in one processor-neutral shape
    /// its connector maps its answer into (docs/connectors.md); the rules below decide on it. A connector queries either
    /// the payment (what the processor holds for it now) or the operation itself (every transaction under the
    /// reference the operation was sent with), and fills in whatever its answer shows.
    public enum Evidence: Sendable, Equatable, Hashable {
        /// The payment as the query by the processor's id of the payment returned it (nil: no record of it came back).
        case payment(ShownPayment?)
        /// Every transaction the query returned under the operation's own reference (the one it was sent with).
        case transactions([TransactionRecord])

        /// A payment whose record shows its settlement alone (nil: no record of it came back).
        public static func settlement(_ queried: QueriedAuth?) -> Evidence {
            .payment(queried.map { ShownPayment(settlement: $0) })
        }
    }

    /// What a processor shows of one payment, each part nil when its answer does not carry it: its settle status and
    /// the amount it will settle (a processor whose operations update them), whether it is captured, and the amount
    /// refunded so far (minor units; a processor that keeps cumulative operation fields).
    public struct ShownPayment: Sendable, Equatable, Hashable {
        public var settlement: QueriedAuth?
        public var isCaptured: Bool?
        public var refundedAmount: Int64?

        public init(settlement: QueriedAuth? = nil, isCaptured: Bool? = nil, refundedAmount: Int64? = nil) {
            self.settlement = settlement
            self.isCaptured = isCaptured
            self.refundedAmount = refundedAmount
        }
    }

    /// One transaction of a query answer: what it was (a capture, reversal or refund, as an operation kind; nil for any
    /// other), its amount in minor units and how its result groups.
    public struct TransactionRecord: Sendable, Equatable, Hashable {
        public enum Result: String, Sendable, Hashable { case succeeded, rejected, pending }
        public var kind: OperationRequest.Kind?
        public var amount: Int64?
        public var result: Result
        /// The processor's id of the transaction: a capture's is what a later refund references, at a processor that
        /// refunds captures (``GatewayConnector/refundTarget(payment:capture:)``).
        public var id: String?

        public init(kind: OperationRequest.Kind?, amount: Int64?, result: Result, id: String? = nil) {
            self.kind = kind
            self.amount = amount
            self.result = result
            self.id = id
        }
    }

    /// Whether a lost answer to `operation` may be reconciled by a query (else it goes to review at once, never
    /// resent). A settlement-updates processor's refund cannot: no source confirms a filter that finds a refund by its
    /// parent. Processor operations can (``reconcile(_:before:effect:evidence:)``), a refund only ever to "took effect"
    /// or review.
    public func reconcilable(_ operation: GatewayOperation, transport: Transport) -> Bool {
        guard case .refund = operation else { return true }
        return transport.isConnector
    }

    /// The processor's id of the one successful transaction of `operation`'s kind that `evidence` shows (a transaction
    /// record's `id`), which is what a "took effect" rests on; nil when the evidence names none.
    public func transactionId(_ operation: GatewayOperation, evidence: Evidence) -> String? {
        guard case .transactions(let records) = evidence else { return nil }
        let mine = records.filter { $0.kind == Self.recordKind(operation) && $0.result == .succeeded }
        return mine.count == 1 ? mine[0].id : nil
    }

    /// The kind of record a status query shows for `operation`.
    static func recordKind(_ operation: GatewayOperation) -> OperationRequest.Kind {
        switch operation {
        case .capture, .hold: .capture
        case .void: .void
        case .refund, .lowerCapture: .refund
        }
    }

    /// What `evidence` says about `operation` (sent from lifecycle `before`, `effect` expected) whose answer was lost,
    /// decided on what the evidence shows, whichever processor showed it: a settle-status update by the payment's
    /// settlement; a capture by whether the payment is captured; a refund by the payment's cumulative refunded amount;
    /// any operation by the transactions under its own reference.
    /// A refund is never "not applied": a refund the query does not show goes to review, so a lost answer never turns
    /// into a second refund. A capture or reversal the query does not show may be sent again (the processors refuse a
    /// second capture of one authorisation anyway, docs/connectors.md).
    public func reconcile(_ operation: GatewayOperation, before: MoneyLifecycle, effect: Effect, evidence: Evidence) -> Reconciliation {
        let lostRefund = Reconciliation.review(code: "refund_outcome_unknown",
                                               reason: "the refund's answer was lost and the status query does not show it: never resent automatically")
        switch evidence {
        case .payment(nil):
            return .inconclusive(code: "reconciliation_inconclusive", reason: "the status query returned no record of the payment")
        case .payment(let shown?):
            if shown.settlement != nil, operation.settlementUpdate != nil {
                // An update of the payment's settle status and amount: they show whether it took effect.
                return reconcile(operation, before: before, effect: effect, queried: shown.settlement)
            }
            switch operation {
            case .capture:
                guard let captured = shown.isCaptured else {
                    return .inconclusive(code: "reconciliation_inconclusive", reason: "the payment's record does not say whether it is captured")
                }
                return captured ? .tookEffect : .notApplied
            case .refund(_, let amount):
                // The payment's operations are serialised under its lock (one open at a time): the record's cumulative
                // refunded amount is this payment's refunds before this one, plus this one if it took effect.
                if let refunded = shown.refundedAmount { return refunded == before.refundedAmount + amount ? .tookEffect : lostRefund }
                // A record of the payment's settlement alone: its refunds are transactions of their own, which it
                // does not show.
                if shown.settlement != nil { return reconcile(operation, before: before, effect: effect, queried: shown.settlement) }
                return .inconclusive(code: "reconciliation_inconclusive", reason: "the payment's record has no refunded amount")
            case .void, .lowerCapture, .hold:
                return .review(code: "operation_state_unexpected", reason: "a payment record without its settlement cannot reconcile a \(operation.name)")
            }
        case .transactions(let records):
            let kind = Self.recordKind(operation)
            let mine = records.filter { $0.kind == kind }
            guard let record = mine.first else {
                if case .refund = operation { return lostRefund }
                return .notApplied
            }
            let sent: Int64? = switch operation {
            case .capture(_, let amount): amount
            case .refund(_, let amount), .lowerCapture(_, let amount): amount
            case .void, .hold: nil
            }
            guard mine.count == 1, sent == nil || record.amount == sent else {
                return .review(code: "operation_state_unexpected",
                               reason: "\(mine.count) \(kind.rawValue) transaction(s) under the operation's merchantTransactionId, or one of another amount")
            }
            switch record.result {
            case .succeeded: return .tookEffect
            case .pending: return .inconclusive(code: "reconciliation_inconclusive", reason: "the \(kind.rawValue) transaction is still pending")
            case .rejected:
                return .review(code: "operation_state_unexpected", reason: "the \(kind.rawValue) transaction was rejected after its answer was lost")
            }
        }
    }
}

// MARK: A late AUTH on a failed payment

extension OperationProtocol {
    public enum LateAuthorization: Sendable, Equatable, Hashable {
        /// Void it (audited, `payment.voided`): the customer is never charged for a payment reported failed.
        case void(GatewayOperation)
        /// The gateway already cancelled it: nothing to do.
        case alreadyCancelled
        /// Query again before deciding.
        case wait(code: String, reason: String)
        /// A person must act (`late_authorization`): it cannot be voided automatically.
        case review(code: String, reason: String)
    }

    /// What to do about an AUTH that reconciliation found authorised on a payment PayPipe already ended `failed`
    /// (e.g. `deadline_exceeded`). A failed void goes to review as well, decided by the caller from its answer.
    public func lateAuthorization(_ gateway: GatewayFacts, transport: Transport, captureMode: CaptureMode = .automatic) -> LateAuthorization {
        switch transport.operations {
        case .processorOperations where transport.voids && captureMode == .manual:
            // A pre-authorisation: reversed whole.
            return .void(.void(transactionReference: gateway.transactionReference))
        case .processorOperations where transport.voids:
            return .review(code: "late_authorization", reason: "the late \(transport.name) \(transport.capturedAuthorization) is captured: a refund is due")
        case .processorOperations:
            return .review(code: "late_authorization",
                           reason: "the late \(transport.name) authorisation cannot be voided (\(transport.name) has no void API): a refund is due")
        case .settlementUpdates, .refused:
            break
        }
        switch gateway.settleStatus {
        case .cancelled:
            return .alreadyCancelled
        case .settling, .settled:
            return .review(code: "late_authorization", reason: "the late AUTH settled (\(gateway.settleStatus)): a refund is due")
        case .other(let text):
            return .wait(code: "gateway_settlestatus_unknown", reason: "unknown settlement state \(text): reconciled by a status query first")
        case .pendingSettlement, .pendingManualSettlement, .suspended:
            if case .refused(_, let lateVoid) = transport.operations {
                return .review(code: "late_authorization", reason: "the late AUTH cannot be voided automatically: \(lateVoid)")
            }
            return .void(.void(transactionReference: gateway.transactionReference))
        }
    }
}
