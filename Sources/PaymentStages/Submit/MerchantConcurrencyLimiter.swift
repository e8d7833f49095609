import Dispatch
import Synchronization

/// Caps how many gateway calls one merchant may have in flight in this worker, so a merchant whose gateway is slow
/// (every call waiting for the timeout) cannot occupy every lane and starve the others: its excess messages are
/// parked in the retry tiers instead.
///
/// Each merchant has a counting semaphore of `limit` slots. A call that finds none sleeps until a slot is released
/// (or its timeout passes) instead of polling: a worker has many more pool threads than one merchant has slots, and
/// threads waking every millisecond to look cost more CPU than the gateway calls themselves.
public final class MerchantConcurrencyLimiter: Sendable {
    public let limit: Int
    private let merchants = Mutex<[String: Merchant]>([:])

    /// One merchant's slots, kept for the limiter's life (one per merchant seen).
    private final class Merchant: Sendable {
        let slots: DispatchSemaphore
        let inFlight = Atomic<Int>(0)

        init(limit: Int) {
            slots = DispatchSemaphore(value: limit)
        }

        deinit {
            // libdispatch traps when a semaphore is freed below its initial value: give back the slots still taken
            // (a limiter dropped with calls in flight, as at shutdown).
            for _ in 0..<inFlight.load(ordering: .relaxed) { slots.signal() }
        }
    }

    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    private func merchant(_ merchantId: String) -> Merchant {
        merchants.withLock { merchants in
            if let known = merchants[merchantId] { return known }
            let created = Merchant(limit: limit)
            merchants[merchantId] = created
            return created
        }
    }

    /// Takes a slot for `merchantId`, or returns false when it already has `limit` calls in flight.
    public func tryAcquire(_ merchantId: String) -> Bool {
        acquire(merchantId, timeout: 0)
    }

    /// Takes a slot, waiting up to `timeout` seconds for one to be released.
    public func acquire(_ merchantId: String, timeout: Double) -> Bool {
        let merchant = merchant(merchantId)
        guard merchant.slots.wait(timeout: .now() + max(0, timeout)) == .success else { return false }
        merchant.inFlight.add(1, ordering: .relaxed)
        return true
    }

    /// Gives back a slot taken by ``acquire(_:timeout:)`` or ``tryAcquire(_:)``; a release without one is ignored.
    public func release(_ merchantId: String) {
        let merchant = merchant(merchantId)
        // Only a taken slot is given back: an unmatched release must not raise the merchant's limit.
        var current = merchant.inFlight.load(ordering: .relaxed)
        while current > 0 {
            let (exchanged, original) = merchant.inFlight.compareExchange(expected: current, desired: current - 1, ordering: .relaxed)
            if exchanged {
                merchant.slots.signal()
                return
            }
            current = original
        }
    }

    public func inFlight(_ merchantId: String) -> Int {
        merchant(merchantId).inFlight.load(ordering: .relaxed)
    }
}
