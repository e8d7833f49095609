import Foundation
import Pipeline

/// The operations worker's upkeep as decisions (pure: no database, no clock of its own, no network): which calls to
/// make for the payments read (a manual AUTH to suspend, captured payments whose settlement to learn), and what their
/// answers write. ``OperationsUpkeepRound`` (and ``OperationsStage`` for a refund's settlement) reads, sends the
/// calls through the call-out phase and applies the writes.
public enum OperationUpkeep {
    /// A payment the upkeep may call about: its merchant, processor reference and currency.
    public struct Payment: Sendable, Equatable, Hashable {
        public var id: UUID
        public var merchantId: String
        public var transactionReference: String
        public var currency: String
        /// The trace context the payment's row keeps, for the upkeep's log lines about it (`traceId`, `spanId`).
        public var traceparent: String?

        public init(id: UUID, merchantId: String, transactionReference: String, currency: String = "", traceparent: String? = nil) {
            self.id = id
            self.merchantId = merchantId
            self.transactionReference = transactionReference
            self.currency = currency
            self.traceparent = traceparent
        }

        var query: SettlementQuery { SettlementQuery(transactionReference: transactionReference, currency: currency) }
    }

    /// A captured payment's settlement facts, for ``SettlementSchedule``.
    public struct Captured: Sendable, Equatable {
        public var payment: Payment
        /// The AUTH's `settleduedate` (`YYYY-MM-DD`), when its answer carried one.
        public var dueDate: String?
        public var lastQueried: Date?
        public var capturedAt: Date

        public init(payment: Payment, dueDate: String?, lastQueried: Date?, capturedAt: Date) {
            self.payment = payment
            self.dueDate = dueDate
            self.lastQueried = lastQueried
            self.capturedAt = capturedAt
        }
    }

    /// A call the upkeep makes, through the call-out phase like an operation's.
    public enum Call: Sendable, Equatable {
        /// Suspend the manual AUTH of `payment` (``OperationConnector/suspend(transactionReference:endpoint:requestId:using:)``).
        case suspend(Payment)
        /// Ask whether `payments`, all of one merchant, settled (``OperationConnector/querySettlement(_:endpoint:requestId:now:using:)``).
        case querySettlement(merchantId: String, [Payment])

        public var merchantId: String {
            switch self {
            case .suspend(let payment): payment.merchantId
            case .querySettlement(let merchantId, _): merchantId
            }
        }

        /// The request id the call carries (logs at the processor): a payment's or the merchant's, never secret.
        var requestId: String {
            switch self {
            case .suspend(let payment): "U\(payment.id.paymentIDText.prefix(8))"
            case .querySettlement(_, let payments) where payments.count == 1: "S\(payments[0].id.paymentIDText.prefix(8))"
            case .querySettlement(let merchantId, _): "S\(merchantId.prefix(8))"
            }
        }
    }

    /// What a call came back with.
    public enum Answer: Sendable, Equatable {
        case suspended(OperationSteps.Answer)
        case settlement(Result<[String: OperationProtocol.QueriedAuth], OperationQueryFailure>)
    }

    /// What an answer writes (``applying(_:money:)`` decides the statements).
    public enum Write: Sendable, Equatable {
        /// The AUTH's settle status as now known, with no lifecycle change (the suspension).
        case settleStatus(UUID, SettlementState)
        /// A settlement query's answer: `captured → settled` when settled, else kept as the last learnt status.
        case learnt(UUID, OperationProtocol.QueriedAuth)
        /// Queried, nothing came back: checked again after the poll interval.
        case checked(UUID)
    }

    /// Before a refund of a payment still recorded `captured`: one settlement query of it, where its merchant's
    /// connector learns settlement before a refund.
    public static func settlementBeforeRefund(_ payment: Payment, capabilities: UpkeepCapabilities?) -> Call? {
        capabilities?.learnsSettlementBeforeRefund == true ? .querySettlement(merchantId: payment.merchantId, [payment]) : nil
    }

    /// What `answer` to `call` writes. A suspension confirmed records settle status 2; a failed one writes nothing (it
    /// is tried again next round). A settlement answer records what it shows of each payment; with `markUnanswered`
    /// (the poll) a payment it does not show is marked checked, so it waits for the next interval; a failed query
    /// writes nothing.
    public static func writes(_ call: Call, _ answer: Answer, markUnanswered: Bool) -> [Write] {
        switch (call, answer) {
        case (.suspend(let payment), .suspended(.confirmed)):
            return [.settleStatus(payment.id, .suspended)]
        case (.querySettlement(_, let payments), .settlement(.success(let found))):
            return payments.compactMap { payment in
                if let queried = found[payment.transactionReference] { return .learnt(payment.id, queried) }
                return markUnanswered ? .checked(payment.id) : nil
            }
        default:
            return []
        }
    }

    /// The upkeep's writes as statements (``PaymentStore/changeLifecycles(_:actor:on:)`` and
    /// ``PaymentStore/recordSettleStatuses(_:on:)``, one each).
    public struct Applying: Sendable, Equatable {
        public var lifecycles: [PaymentStore.LifecycleChanging] = []
        public var learnt: [Learnt] = []

        /// A payment stamped checked, with the settle status learnt (nil: nothing learnt).
        public struct Learnt: Sendable, Equatable {
            public var paymentId: UUID
            public var settleStatus: SettlementState?
        }
    }

    /// What `writes` come to on the payments' money state read under their locks (`money`; pure): settled (100) moves
    /// a `captured` payment to `settled`; any other known status is kept as the last learnt one; an unknown one, or a
    /// payment without a lifecycle, writes nothing; a suspension confirmed keeps its settle status; a payment the
    /// query did not show is stamped checked.
    public static func applying(_ writes: [Write], money: [UUID: PaymentStore.MoneyState]) throws -> Applying {
        var applying = Applying()
        for write in writes {
            switch write {
            case .settleStatus(let payment, let status):
                applying.learnt.append(.init(paymentId: payment, settleStatus: status))
            case .checked(let payment):
                applying.learnt.append(.init(paymentId: payment, settleStatus: nil))
            case .learnt(let payment, let queried):
                guard let lifecycle = money[payment]?.lifecycle else { continue }
                if case .other = queried.settleStatus { continue }
                applying.learnt.append(.init(paymentId: payment, settleStatus: queried.settleStatus))
                guard lifecycle.status == .captured, queried.settleStatus == .settled else { continue }
                var settled = lifecycle
                settled.status = .settled
                applying.lifecycles.append(.init(paymentId: payment, change: try CheckedLifecycleChange(from: lifecycle, to: settled),
                                                 settleStatus: .settled, operationId: nil, detail: "settlement learnt by status query"))
            }
        }
        return applying
    }
}
