import Foundation
import Synchronization

/// One `AMQPPublisher.publish` call: its messages, and the hand-off of the outcome from the owner
/// thread to the blocked caller.
final class AMQPPublishRequest: Sendable {
    let messages: [AMQPOutboundMessage]
    private let outcome = Mutex<Outcome>(.pending)
    private let done = DispatchSemaphore(value: 0)

    private enum Outcome {
        case pending
        case finished(Result<Void, AMQPError>)
        /// The caller gave up (timeout); the owner stops (re-)publishing what is left.
        case abandoned
    }

    init(messages: [AMQPOutboundMessage]) {
        self.messages = messages
    }

    /// True once completed or abandoned: nothing more needs to happen for it.
    var isFinished: Bool {
        outcome.withLock { if case .pending = $0 { false } else { true } }
    }

    /// Called by the owner thread once every message is settled (or on shutdown). First call wins.
    func complete(_ result: Result<Void, AMQPError>) {
        let completed = outcome.withLock { state -> Bool in
            guard case .pending = state else { return false }
            state = .finished(result)
            return true
        }
        if completed { done.signal() }
    }

    /// Blocks the caller until the outcome is known or `deadline` passes. On timeout the request is
    /// abandoned and nil returned, unless it completed at the same moment.
    func wait(until deadline: DispatchTime) -> Result<Void, AMQPError>? {
        _ = done.wait(timeout: deadline)
        return outcome.withLock { state -> Result<Void, AMQPError>? in
            switch state {
            case .finished(let result):
                return result
            case .pending, .abandoned:
                state = .abandoned
                return nil
            }
        }
    }
}
