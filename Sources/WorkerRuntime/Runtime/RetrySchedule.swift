/// When to retry a message after a transient failure.
///
/// Delays are realised by RabbitMQ, not by sleeping in a worker: each distinct delay is a *tier*, a queue
/// with that `x-message-ttl` whose expired messages dead-letter back to the stage queue. One queue per tier
/// (rather than per-message `expiration`) avoids head-of-line blocking, because every message in a tier
/// expires in arrival order. Jitter is a per-message expiration of 80–100 % of the tier's delay (see
/// ``DeliveryRouter/retry(_:after:)``), which never exceeds the queue's own TTL.
public struct RetrySchedule: Sendable, Equatable {
    /// Tier delays in seconds, ascending. Attempt *n* (1-based) waits `delays[min(n, count) - 1]`.
    public let delays: [Double]
    /// Retries allowed before the message is dead-lettered as exhausted.
    public let maxRetries: Int

    public static let standard = RetrySchedule(delays: [1, 5, 30, 120, 600], maxRetries: 8)

    public init(delays: [Double], maxRetries: Int) {
        precondition(!delays.isEmpty, "a retry schedule needs at least one tier")
        self.delays = delays.sorted()
        self.maxRetries = maxRetries
    }

    /// The decision for a message that has already been retried `previousRetries` times.
    public enum Decision: Equatable, Sendable {
        case retry(tier: Int, delay: Double)
        case exhausted
    }

    public func decision(previousRetries: Int) -> Decision {
        // A negative count (a header nobody should have trusted) is a first retry, never a negative tier index.
        let previous = max(previousRetries, 0)
        guard previous < maxRetries else { return .exhausted }
        let tier = min(previous, delays.count - 1)
        return .retry(tier: tier, delay: delays[tier])
    }

    /// The tier that re-drives a message waiting `seconds` more for a known instant (``StageFailure/waiting``), and the
    /// message's own expiration: the longest tier not past the instant, for exactly its delay, or the shortest tier
    /// when the instant is nearer than that (or already passed on this clock). A message whose expiration equals its
    /// tier's TTL is never held behind an earlier one (each of those expires no later), so it leaves on time; repeated
    /// at each delivery (the handler decides the wait again), the message arrives at most the shortest tier after the
    /// instant. Nil when the instant is further than ``maximumWait``, or passed by more than the shortest tier (a stale
    /// instant, not a wait): such a wait is an ordinary, counted retry, so no wait can loop without a budget.
    public func hop(toward seconds: Double) -> (tier: Int, delay: Double)? {
        guard seconds <= maximumWait, seconds >= -delays[0] else { return nil }
        let tier = delays.lastIndex { $0 <= seconds } ?? 0
        return (tier, delays[tier])
    }

    /// The longest wait re-driven by ``hop(toward:)`` without counting: as long as the whole schedule's retries.
    public var maximumWait: Double { delays.last! * Double(maxRetries) }

    /// Name of the tier queue for `stage`, e.g. `paypipe.submit.retry.30s`. The delay is part of the name
    /// because a queue's TTL argument cannot change after declaration: a new schedule gets new queues.
    public func queueName(for stage: StageName, tier: Int) -> String {
        "paypipe.\(stage.rawValue).retry.\(Self.label(delays[tier]))"
    }

    static func label(_ seconds: Double) -> String {
        let milliseconds = Int((seconds * 1000).rounded())
        if milliseconds % 1000 != 0 { return "\(milliseconds)ms" }
        return "\(milliseconds / 1000)s"
    }

    /// Parses a comma-separated list such as `1s,5s,30s,2m,10m`.
    public static func parseDelays(_ text: String) -> [Double]? {
        let parts = text.split(separator: ",").map { DurationParser.seconds(String($0)) }
        guard !parts.isEmpty, parts.allSatisfy({ ($0 ?? 0) > 0 }) else { return nil }
        return parts.compactMap { $0 }
    }
}
