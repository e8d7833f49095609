import Foundation

/// A token bucket (messages per second with a burst), as a value: the caller passes the time, so it is tested with
/// a hand-moved clock and holds no lock of its own (``EndpointGateState`` keeps one per endpoint).
///
/// ``reserve(at:maxWait:)`` takes a token now or books the next free one: the tokens may go negative, each booking
/// pushing the next one back by `1 / rate`, so concurrent waiters queue in order and the long-run rate never
/// exceeds `rate` whatever the number of callers.
public struct TokenBucket: Sendable, Equatable {
    /// Tokens per second (> 0).
    public private(set) var rate: Double
    /// The most tokens saved up while idle: the burst allowed after a quiet spell.
    public private(set) var capacity: Double
    private var tokens: Double
    private var updatedAt: Date

    /// A full bucket. `burst` defaults to one second's worth (at least one token).
    public init(rate: Double, burst: Double? = nil, now: Date) {
        self.rate = max(rate, 0.001)
        self.capacity = max(1, burst ?? rate)
        self.tokens = capacity
        self.updatedAt = now
    }

    public enum Reservation: Sendable, Equatable {
        /// The token is booked: send after waiting this many seconds (0: at once).
        case after(Double)
        /// The next free token is more than `maxWait` away; nothing was booked.
        case refused(wait: Double)
    }

    public mutating func reserve(at now: Date, maxWait: Double) -> Reservation {
        refill(now)
        let wait = tokens >= 1 ? 0 : (1 - tokens) / rate
        guard wait <= maxWait else { return .refused(wait: wait) }
        tokens -= 1
        return .after(wait)
    }

    /// Changes the rate (a merchant's override applied or removed), keeping what was saved up within the new burst.
    public mutating func retune(rate: Double, burst: Double? = nil, at now: Date) {
        refill(now)
        self.rate = max(rate, 0.001)
        self.capacity = max(1, burst ?? rate)
        tokens = min(tokens, capacity)
    }

    /// Whether the bucket is full: forgetting it then changes nothing.
    public func isFull(at now: Date) -> Bool {
        tokens + max(0, now.timeIntervalSince(updatedAt)) * rate >= capacity
    }

    private mutating func refill(_ now: Date) {
        let elapsed = max(0, now.timeIntervalSince(updatedAt))
        tokens = min(capacity, tokens + elapsed * rate)
        updatedAt = max(updatedAt, now)
    }
}
