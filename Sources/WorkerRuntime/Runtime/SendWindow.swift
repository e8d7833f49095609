import Foundation
import HTTP

/// How long a call may wait on our side before its bytes leave, the call-out phase's exactly-once check: ``gate``
/// refuses to send after ``deadline`` (measured on the monotonic clock from before the call's attempt was committed,
/// so never later than the attempt's `send_deadline` on the database clock), however long the call queued behind
/// others. A refusal is certain-not-sent (``HTTP/HTTPClientError/refusedBeforeSending(_:)``). ``expiresAt`` is the
/// wall-clock deadline a signed request's own expiry (the AUTH JWT's `exp`) derives from.
public struct SendWindow: Sendable {
    public let deadline: ContinuousClock.Instant
    public let expiresAt: Date

    public init(deadline: ContinuousClock.Instant, expiresAt: Date) {
        self.deadline = deadline
        self.expiresAt = expiresAt
    }

    /// A window of `seconds` from `start` (taken before the attempt is committed).
    public init(seconds: Double, from start: ContinuousClock.Instant, wallClock: Date) {
        deadline = start.advanced(by: .milliseconds(Int64((seconds * 1000).rounded(.down))))
        expiresAt = wallClock.addingTimeInterval(seconds)
    }

    /// Why a send starting at `now` is refused; `nil` while the window is open (the deadline itself included).
    public func refusal(at now: ContinuousClock.Instant) -> String? {
        now <= deadline ? nil : "send window passed \(now - deadline) ago"
    }

    /// The check libcurl runs once connected, right before the first request byte.
    public var gate: HTTPSendGate {
        let window = self
        return HTTPSendGate { _ in window.refusal(at: ContinuousClock.now) }
    }
}
