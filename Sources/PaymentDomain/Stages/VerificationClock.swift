import Foundation

/// The instant a token's CMS signing time is judged against (Apple's step 4: "not too old").
///
/// The job's publish time, from the AMQP `timestamp` property the publisher sets, so a decrypt outage or backlog does
/// not fail every queued payment, and a dead letter replayed after a fix is judged as when it was first published.
/// RabbitMQ (3.10) stamps nothing itself: the publisher is trusted for this as it is for the amount, and the replay
/// guard on the token's `transactionId` keeps an old token from being used twice whatever its timestamp says.
///
/// A timestamp is accepted only within [first receipt − `maxQueueAge`, first receipt + `maxFutureSkew`]. Outside
/// that it is ignored, not a failure: first receipt is then the clock, exactly as for a job without a timestamp. A
/// publisher's wrong clock can thus never widen the window beyond those bounds, and never fails a payment that would
/// have passed without the property (the strictest clock decrypt has is first receipt).
public struct VerificationClock: Sendable, Equatable {
    /// `PAYPIPE_MAX_QUEUE_AGE` (default 24 h): how long before first receipt a publish time may be.
    public var maxQueueAge: TimeInterval
    /// `PAYPIPE_APPLEPAY_MAX_FUTURE_SKEW`: how long after first receipt a publish time may be (publisher clock skew).
    public var maxFutureSkew: TimeInterval

    public static let defaultMaxQueueAge: TimeInterval = 86_400

    public init(maxQueueAge: TimeInterval = Self.defaultMaxQueueAge, maxFutureSkew: TimeInterval = 60) {
        self.maxQueueAge = maxQueueAge
        self.maxFutureSkew = maxFutureSkew
    }

    /// What the instant was taken from.
    public enum Basis: Sendable, Equatable {
        case publishTimestamp
        case firstReceipt
        /// A timestamp was set but lies outside the accepted range.
        case firstReceiptTimestampIgnored
    }

    public func instant(publishedAt: Date?, firstReceivedAt: Date) -> (instant: Date, basis: Basis) {
        guard let publishedAt else { return (firstReceivedAt, .firstReceipt) }
        let earliest = firstReceivedAt.addingTimeInterval(-maxQueueAge)
        let latest = firstReceivedAt.addingTimeInterval(maxFutureSkew)
        guard earliest <= publishedAt, publishedAt <= latest else { return (firstReceivedAt, .firstReceiptTimestampIgnored) }
        return (publishedAt, .publishTimestamp)
    }
}
