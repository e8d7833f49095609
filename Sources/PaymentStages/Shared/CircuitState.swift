import Foundation

/// The consecutive-failure circuit of one remote endpoint, shared by the submit stage's gateway breaker and the
/// notify stage's webhook gate (each keeps one per endpoint under its own lock).
///
/// Closed while failures stay below the threshold; a failure at or past it opens the circuit for `openSeconds`
/// (or longer when the endpoint asked for a pause with `Retry-After`). After that the circuit is half-open: the
/// next success closes it, the next failure re-opens it at once, since the failure count only resets on success.
struct CircuitState: Equatable {
    private(set) var consecutiveFailures = 0
    private(set) var openUntil: Date?

    func isOpen(at now: Date) -> Bool {
        openUntil.map { now < $0 } ?? false
    }

    /// Past its open period but not yet closed by a success.
    func isHalfOpen(at now: Date) -> Bool {
        openUntil.map { now >= $0 } ?? false
    }

    mutating func record(healthy: Bool, failureThreshold: Int, openSeconds: Double, pause: Double? = nil, now: Date) {
        if healthy {
            self = CircuitState()
            return
        }
        consecutiveFailures += 1
        var openFor = consecutiveFailures >= failureThreshold ? openSeconds : 0
        if let pause, pause > 0 { openFor = max(openFor, pause) }
        if openFor > 0 { openUntil = now.addingTimeInterval(openFor) }
    }
}
