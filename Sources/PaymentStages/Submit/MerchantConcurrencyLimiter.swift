import Foundation
import Synchronization

/// Caps how many gateway calls one merchant may have in flight in this worker, so a merchant whose gateway is slow
/// (every call waiting for the timeout) cannot occupy every lane and starve the others: its excess messages are
/// parked in the retry tiers instead.
public final class MerchantConcurrencyLimiter: Sendable {
    public let limit: Int
    private let inFlight = Mutex<[String: Int]>([:])

    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Takes a slot for `merchantId`, or returns false when it already has `limit` calls in flight.
    public func tryAcquire(_ merchantId: String) -> Bool {
        inFlight.withLock { counts in
            let current = counts[merchantId, default: 0]
            guard current < limit else { return false }
            counts[merchantId] = current + 1
            return true
        }
    }

    /// Takes a slot, waiting up to `timeout` seconds for one (polling: slots free up within a call's round trip).
    public func acquire(_ merchantId: String, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !tryAcquire(merchantId) {
            guard Date() < deadline else { return false }
            Thread.sleep(forTimeInterval: 0.001)
        }
        return true
    }

    public func release(_ merchantId: String) {
        inFlight.withLock { counts in
            let remaining = counts[merchantId, default: 1] - 1
            counts[merchantId] = remaining > 0 ? remaining : nil
        }
    }

    public func inFlight(_ merchantId: String) -> Int {
        inFlight.withLock { $0[merchantId, default: 0] }
    }
}
