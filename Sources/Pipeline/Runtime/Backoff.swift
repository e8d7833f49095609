/// Capped exponential backoff with full jitter (delay = random(0, min(cap, base·2^attempt))), the AWS
/// "full jitter" scheme: reconnecting workers spread out instead of stampeding a recovering service.
public struct Backoff: Sendable, Equatable {
    public let base: Double
    public let cap: Double

    public init(base: Double = 0.2, cap: Double = 10) {
        self.base = base
        self.cap = cap
    }

    /// Upper bound of the delay before attempt `attempt` (0-based).
    public func ceiling(attempt: Int) -> Double {
        min(cap, base * Double(1 << min(attempt, 30)))
    }

    public func delay<G: RandomNumberGenerator>(attempt: Int, using generator: inout G) -> Double {
        Double.random(in: 0...ceiling(attempt: attempt), using: &generator)
    }

    public func delay(attempt: Int) -> Double {
        var generator = SystemRandomNumberGenerator()
        return delay(attempt: attempt, using: &generator)
    }
}
