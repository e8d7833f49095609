import Foundation
import Pipeline

/// The upkeep round's decisions (``OperationsUpkeepRound``; pure, like the rest of ``OperationUpkeep``): which manual
/// AUTHs to suspend, and which captured payments' settlement to query now. Not a payment's path: a refund's own
/// settlement query is ``OperationUpkeep/settlementBeforeRefund(_:capabilities:)``.
extension OperationUpkeep {
    /// Suspensions: one call per payment whose merchant's connector suspends manual AUTHs on its endpoint (nil
    /// capabilities: no usable endpoint, nothing to call).
    public static func suspensions(_ payments: [Payment], capabilities: (String) -> UpkeepCapabilities?) -> [Call] {
        payments.filter { capabilities($0.merchantId)?.suspendsManualAuthorizations == true }.map(Call.suspend)
    }

    /// The settlement poll: the captured payments whose query is due at `now` (``SettlementSchedule``, `poll` seconds
    /// apart), of merchants whose connector polls, in one query per merchant of at most `limit` payments, merchants
    /// in the order first met.
    public static func settlementQueries(
        _ captured: [Captured], now: Date, poll: Double, limit: Int = 500, capabilities: (String) -> UpkeepCapabilities?
    ) -> [Call] {
        var order: [String] = [], due: [String: [Payment]] = [:]
        for entry in captured where capabilities(entry.payment.merchantId)?.pollsSettlement == true
            && SettlementSchedule.isDue(now: now, dueDate: entry.dueDate, lastQueried: entry.lastQueried, capturedAt: entry.capturedAt, poll: poll) {
            if due[entry.payment.merchantId] == nil { order.append(entry.payment.merchantId) }
            due[entry.payment.merchantId, default: []].append(entry.payment)
        }
        return order.flatMap { merchant in
            stride(from: 0, to: due[merchant]!.count, by: limit).map { start in
                Call.querySettlement(merchantId: merchant, Array(due[merchant]![start..<min(start + limit, due[merchant]!.count)]))
            }
        }
    }
}
