import Foundation
@testable import PaymentStages
@testable import Pipeline
import Testing

/// The upkeep's decisions with an injected clock: which manual AUTHs are suspended, which captured payments' settlement
/// is queried (and batched per merchant), what each answer writes. No database, no processor, no sleep.
@Suite struct OperationUpkeepTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let polling = UpkeepCapabilities(suspendsManualAuthorizations: true, pollsSettlement: true, learnsSettlementBeforeRefund: true)
    static let quiet = UpkeepCapabilities(learnsSettlementBeforeRefund: true)

    static func payment(_ merchant: String, _ reference: String) -> OperationUpkeep.Payment {
        OperationUpkeep.Payment(id: UUID(), merchantId: merchant, transactionReference: reference)
    }

    static func capabilities(_ merchant: String) -> UpkeepCapabilities? {
        switch merchant {
        case "tp": polling
        case "opp": quiet
        default: nil   // no usable endpoint
        }
    }

    @Test func onlyConnectorsThatSuspendAreAskedTo() {
        let tp = Self.payment("tp", "1-1"), opp = Self.payment("opp", "o"), unconfigured = Self.payment("gone", "g")
        #expect(OperationUpkeep.suspensions([tp, opp, unconfigured], capabilities: Self.capabilities) == [.suspend(tp)])
    }

    @Test func settlementIsQueriedWhenDueInOneQueryPerMerchant() {
        let hour = 3600.0
        func captured(_ payment: OperationUpkeep.Payment, capturedAgo: Double, queriedAgo: Double? = nil, due: String? = nil) -> OperationUpkeep.Captured {
            OperationUpkeep.Captured(payment: payment, dueDate: due, lastQueried: queriedAgo.map { Self.now.addingTimeInterval(-$0) },
                                     capturedAt: Self.now.addingTimeInterval(-capturedAgo))
        }
        let old = Self.payment("tp", "1-1"), older = Self.payment("tp", "1-2"), fresh = Self.payment("tp", "1-3")
        let recentlyQueried = Self.payment("tp", "1-4"), pastDue = Self.payment("tp", "1-5"), opp = Self.payment("opp", "o")
        let calls = OperationUpkeep.settlementQueries([
            captured(old, capturedAgo: 2 * hour), captured(older, capturedAgo: 3 * hour), captured(fresh, capturedAgo: 60),
            captured(recentlyQueried, capturedAgo: 5 * hour, queriedAgo: 60),
            // The due date (UTC) has passed: queried though captured a moment ago.
            captured(pastDue, capturedAgo: 60, due: "2027-01-13"),
            captured(opp, capturedAgo: 5 * hour),
        ], now: Self.now, poll: hour, capabilities: Self.capabilities)
        #expect(calls == [.querySettlement(merchantId: "tp", [old, older, pastDue])])
        // The clock moved on: the fresh one is due an interval after its capture.
        let later = OperationUpkeep.settlementQueries([captured(fresh, capturedAgo: 60)], now: Self.now.addingTimeInterval(hour), poll: hour,
                                                      capabilities: Self.capabilities)
        #expect(later == [.querySettlement(merchantId: "tp", [fresh])])
        // At most `limit` payments per query.
        let many = (0..<5).map { Self.payment("tp", "m-\($0)") }
        let split = OperationUpkeep.settlementQueries(many.map { captured($0, capturedAgo: 2 * hour) }, now: Self.now, poll: hour, limit: 2,
                                                      capabilities: Self.capabilities)
        #expect(split.count == 3)
    }

    @Test func whatAnswersWrite() {
        let a = Self.payment("tp", "1-1"), b = Self.payment("tp", "1-2")
        let settled = OperationProtocol.QueriedAuth(settleStatus: .settled, settleBaseAmount: nil)
        let query = OperationUpkeep.Call.querySettlement(merchantId: "tp", [a, b])
        #expect(OperationUpkeep.writes(query, .settlement(.success(["1-1": settled])), markUnanswered: true) == [.learnt(a.id, settled), .checked(b.id)])
        #expect(OperationUpkeep.writes(query, .settlement(.success(["1-1": settled])), markUnanswered: false) == [.learnt(a.id, settled)])
        #expect(OperationUpkeep.writes(query, .settlement(.failure(OperationQueryFailure(code: "x", reason: "y"))), markUnanswered: true).isEmpty)
        #expect(OperationUpkeep.writes(.suspend(a), .suspended(.confirmed(transactionReference: nil)), markUnanswered: true) == [.settleStatus(a.id, .suspended)])
        #expect(OperationUpkeep.writes(.suspend(a), .suspended(.uncertain(code: "t", reason: "timeout")), markUnanswered: true).isEmpty)
    }

    @Test func aRefundLearnsSettlementFirstWhereItsConnectorDoes() {
        let a = Self.payment("tp", "1-1")
        #expect(OperationUpkeep.settlementBeforeRefund(a, capabilities: Self.polling) == .querySettlement(merchantId: "tp", [a]))
        #expect(OperationUpkeep.settlementBeforeRefund(a, capabilities: UpkeepCapabilities()) == nil)
        #expect(OperationUpkeep.settlementBeforeRefund(a, capabilities: nil) == nil)
    }

    /// What the writes come to on the payments' money state read under their locks (``OperationUpkeep/applying(_:money:)``).
    @Test func settledMovesACapturedPaymentOtherStatusesAreKeptAndAnUnknownOneWritesNothing() throws {
        let captured = MoneyLifecycle(status: .captured, captureMode: .manual, authorizedAmount: 1000, capturedAmount: 600)
        var refunded = captured
        refunded.status = .partiallyRefunded
        refunded.refundedAmount = 100
        let money = { (lifecycle: MoneyLifecycle?) in PaymentStore.MoneyState(status: .authorized, lifecycle: lifecycle, settleStatus: nil) }
        let (settles, settling, other, notCaptured, gone, suspended, checked) = (UUID(), UUID(), UUID(), UUID(), UUID(), UUID(), UUID())
        let applying = try OperationUpkeep.applying([
            .learnt(settles, .init(settleStatus: .settled, settleBaseAmount: 600)),
            .learnt(settling, .init(settleStatus: .settling, settleBaseAmount: 600)),
            .learnt(other, .init(settleStatus: .other("7"), settleBaseAmount: nil)),
            .learnt(notCaptured, .init(settleStatus: .settled, settleBaseAmount: 500)),
            .learnt(gone, .init(settleStatus: .settled, settleBaseAmount: 600)),
            .settleStatus(suspended, .suspended),
            .checked(checked),
        ], money: [settles: money(captured), settling: money(captured), other: money(captured), notCaptured: money(refunded), gone: money(nil)])
        var settled = captured
        settled.status = .settled
        #expect(applying.lifecycles == [PaymentStore.LifecycleChanging(
            paymentId: settles, change: try CheckedLifecycleChange(from: captured, to: settled), settleStatus: .settled, operationId: nil,
            detail: "settlement learnt by status query")])
        #expect(applying.learnt == [.init(paymentId: settles, settleStatus: .settled), .init(paymentId: settling, settleStatus: .settling),
                                    .init(paymentId: notCaptured, settleStatus: .settled), .init(paymentId: suspended, settleStatus: .suspended),
                                    .init(paymentId: checked, settleStatus: nil)])
    }
}
