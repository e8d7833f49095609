import Foundation

/// Where an authorised payment's money is, apart from the AUTH pipeline's ``PaymentStatus`` (which still ends at
/// `authorized`). Only operations change it (docs/operations-lifecycle.md):
///
///     authorized ──capture(amount)──▶ captured(amount) ──settlement──▶ settled ──refund──▶ partially_refunded | refunded
///         │                              │   ▲ refund before settlement: a lower amount to settle
///         └──────────void────────────────┴───┴──▶ voided
public enum LifecycleStatus: String, Sendable, CaseIterable, Hashable {
    /// Manual capture: authorised and suspended (held) at the gateway; nothing is captured yet.
    case authorized
    /// Released for settlement for ``MoneyLifecycle/capturedAmount``. An automatic-capture payment
    /// starts here, captured in full by its AUTH.
    case captured
    case settled
    case partiallyRefunded = "partially_refunded"
    case refunded
    case voided

    /// Statuses one operation (or the settlement poll, for `captured → settled`) may lead to.
    public var successors: Set<LifecycleStatus> {
        switch self {
        case .authorized: [.captured, .voided]
        // A refund before settlement lowers the captured amount (still `captured`) or voids it all.
        case .captured: [.captured, .settled, .voided]
        case .settled, .partiallyRefunded: [.partiallyRefunded, .refunded]
        case .refunded, .voided: []
        }
    }

    public var isSettled: Bool {
        switch self {
        case .settled, .partiallyRefunded, .refunded: true
        case .authorized, .captured, .voided: false
        }
    }

    /// Whether a change from this status may raise the captured amount: only the capture of an authorisation.
    public var capturedMayRise: Bool { self == .authorized }

    /// Whether the captured (settled) amount is fixed from this status on: after settlement only refunds move money.
    public var capturedIsFixed: Bool { isSettled }
}

/// Where an AUTH's settlement stands at a processor whose operations are settlement updates
/// (``OperationProtocol/Transport/Operations/settlementUpdates``), as last learnt (its answer, its status query, an
/// update): pending settlement, pending with a manual override, suspended (held), cancelled, settling, settled. A
/// connector maps its processor's values to these in its folder; the stores keep them under their stored codes
/// (`SettlementState.storedCode`, beside `PaymentStore` in the Pipeline module).
public enum SettlementState: Sendable, Hashable, CustomStringConvertible {
    case pendingSettlement, pendingManualSettlement, suspended, cancelled, settling, settled
    /// A value the processor reported that none of the above is: nothing is decided on it until a query tells more.
    case other(String)

    /// The states with a name of their own (every case but ``other(_:)``).
    public static let named: [SettlementState] = [.pendingSettlement, .pendingManualSettlement, .suspended, .cancelled, .settling, .settled]

    /// An update changes an AUTH only while it is pending or suspended (docs/connectors.md).
    public var isUpdatable: Bool {
        switch self {
        case .pendingSettlement, .pendingManualSettlement, .suspended: true
        case .cancelled, .settling, .settled, .other: false
        }
    }

    /// The state in reasons and logs.
    public var description: String {
        switch self {
        case .pendingSettlement: "pending settlement"
        case .pendingManualSettlement: "pending settlement (manual)"
        case .suspended: "suspended"
        case .cancelled: "cancelled"
        case .settling: "settling"
        case .settled: "settled"
        case .other(let text): "unknown (\(text))"
        }
    }
}

/// The money state of one authorised payment, amounts in minor units of the payment's currency.
public struct MoneyLifecycle: Sendable, Equatable, Hashable {
    public var status: LifecycleStatus
    public var captureMode: CaptureMode
    /// The AUTH's amount: nothing is ever captured beyond it.
    public var authorizedAmount: Int64
    /// The amount released for settlement (the AUTH's amount to settle): 0 before a manual capture, lowered by
    /// refunds before settlement, 0 once voided.
    public var capturedAmount: Int64
    /// The sum of succeeded refunds (only after settlement).
    public var refundedAmount: Int64
    /// `captureWithin` after the authorisation: an uncaptured manual authorisation is voided after it.
    public var captureDeadline: Date?

    public init(status: LifecycleStatus, captureMode: CaptureMode, authorizedAmount: Int64, capturedAmount: Int64,
                refundedAmount: Int64 = 0, captureDeadline: Date? = nil) {
        self.status = status
        self.captureMode = captureMode
        self.authorizedAmount = authorizedAmount
        self.capturedAmount = capturedAmount
        self.refundedAmount = refundedAmount
        self.captureDeadline = captureDeadline
    }

    /// The lifecycle an AUTH starts: automatic capture is captured in full; manual is authorised, nothing captured.
    public static func afterAuthorization(amount: Int64, mode: CaptureMode, captureDeadline: Date? = nil) -> MoneyLifecycle {
        switch mode {
        case .automatic: MoneyLifecycle(status: .captured, captureMode: mode, authorizedAmount: amount, capturedAmount: amount)
        case .manual: MoneyLifecycle(status: .authorized, captureMode: mode, authorizedAmount: amount, capturedAmount: 0,
                                     captureDeadline: captureDeadline)
        }
    }

    /// What a refund may still take: before settlement the captured amount (a refund lowers it), after it the settled
    /// amount less the refunds made.
    public var refundable: Int64 {
        switch status {
        case .captured: capturedAmount
        case .settled, .partiallyRefunded: capturedAmount - refundedAmount
        case .authorized, .refunded, .voided: 0
        }
    }

    /// Whether `self → next` is a lifecycle change: both states consistent, an edge of the diagram (``LifecycleStatus/successors``),
    /// the authorised amount kept, the refunded amount never lowered, the captured amount raised only from `authorized`
    /// (``LifecycleStatus/capturedMayRise``) and fixed after settlement (``LifecycleStatus/capturedIsFixed``).
    ///
    /// The one statement of the rule: `CheckedLifecycleChange` applies it before a statement binds a change, and the
    /// database's safety net (the trigger `payments_lifecycle`) is generated from the same table
    /// (`PayPipeSchema.lifecycleRules`); an integration test enumerates every pair and shows both agree.
    public func permits(_ next: MoneyLifecycle) -> Bool {
        isConsistent && next.isConsistent && status.successors.contains(next.status)
            && next.authorizedAmount == authorizedAmount && next.refundedAmount >= refundedAmount
            && (status.capturedMayRise || next.capturedAmount <= capturedAmount)
            && (!status.capturedIsFixed || next.capturedAmount == capturedAmount)
    }

    /// The invariants every state must keep (the database checks the same under the payment's lock):
    /// captured ≤ authorised, refunded ≤ captured (= settled), nothing refunded before settlement, nothing left on a void.
    public var isConsistent: Bool {
        guard authorizedAmount > 0, (0...authorizedAmount).contains(capturedAmount), (0...capturedAmount).contains(refundedAmount) else {
            return false
        }
        switch status {
        case .authorized: return capturedAmount == 0 && refundedAmount == 0
        case .captured, .settled: return capturedAmount > 0 && refundedAmount == 0
        case .partiallyRefunded: return refundedAmount > 0 && refundedAmount < capturedAmount
        case .refunded: return refundedAmount > 0 && refundedAmount == capturedAmount
        case .voided: return capturedAmount == 0 && refundedAmount == 0
        }
    }
}

/// A lifecycle change a statement is about to write, already checked against ``MoneyLifecycle``: the only way the
/// payments store's lifecycle statements (Pipeline's `PaymentStore.changeLifecycles`) obtain what they bind, so no
/// statement writes a state outside the diagram or one breaking the invariants (the database checks the same again).
public struct CheckedLifecycleChange: Sendable, Equatable {
    public let from: MoneyLifecycle
    public let to: MoneyLifecycle

    public struct Illegal: Error, Equatable, CustomStringConvertible {
        public let from: MoneyLifecycle
        public let to: MoneyLifecycle
        public var description: String {
            "illegal lifecycle change \(from.status.rawValue)(\(from.capturedAmount)/\(from.refundedAmount)) → "
                + "\(to.status.rawValue)(\(to.capturedAmount)/\(to.refundedAmount))"
        }
    }

    public init(from: MoneyLifecycle, to: MoneyLifecycle) throws(Illegal) {
        guard from.permits(to) else {
            throw Illegal(from: from, to: to)
        }
        self.from = from
        self.to = to
    }
}
