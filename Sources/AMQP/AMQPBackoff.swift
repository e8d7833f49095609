import Foundation

/// Capped exponential backoff with full jitter for reconnect attempts.
///
/// Full jitter (a uniform delay in `0...min(cap, base·2ⁿ)`) spreads the reconnects of many workers
/// after a broker restart instead of having them all hit the broker at the same instant.
public struct AMQPBackoff: Sendable, Equatable {
    /// Upper bound of the first attempt's delay, in seconds.
    public var baseSeconds: Double
    /// Largest upper bound any attempt can reach, in seconds.
    public var capSeconds: Double

    public init(baseSeconds: Double = 0.2, capSeconds: Double = 10) {
        self.baseSeconds = baseSeconds
        self.capSeconds = capSeconds
    }

    /// The upper bound of the delay before attempt `attempt` (1-based).
    public func ceiling(forAttempt attempt: Int) -> Double {
        let exponent = Double(max(0, min(attempt - 1, 62)))
        return min(capSeconds, baseSeconds * pow(2, exponent))
    }

    /// A random delay in `0...ceiling(forAttempt:)`.
    public func delay(forAttempt attempt: Int) -> Double {
        let ceiling = ceiling(forAttempt: attempt)
        return ceiling > 0 ? Double.random(in: 0...ceiling) : 0
    }
}
