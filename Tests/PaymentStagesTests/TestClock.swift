import Foundation
import Synchronization

/// A settable clock for time-dependent policies (circuit breaker).
final class TestClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_767_225_600))
    var now: Date { current.withLock { $0 } }
    func advance(_ seconds: Double) { current.withLock { $0.addTimeInterval(seconds) } }
}
