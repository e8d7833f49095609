import Foundation

/// The consecutive-failure circuit of one remote endpoint, as a value (``EndpointGateState`` keeps one per endpoint).
///
/// Closed while failures stay below the threshold; a failure at or past it opens the circuit for `openSeconds`
/// (or longer when the endpoint asked for a pause with `Retry-After`). After that the circuit is half-open, and the
/// one rule for every caller applies: a single trial call at a time. Its success closes the circuit; its failure
/// re-opens it at once (the failure count only resets on success); a trial that says nothing about the endpoint (the
/// caller refused to send after all) just lets the next trial through.
public struct CircuitState: Sendable, Equatable {
    public private(set) var consecutiveFailures = 0
    public private(set) var openUntil: Date?
    /// The half-open circuit's one trial call is in flight.
    public private(set) var probing = false

    public init() {}

    public enum Phase: Sendable, Equatable {
        case closed, open, halfOpen
    }

    public func phase(at now: Date) -> Phase {
        guard let openUntil else { return .closed }
        return now < openUntil ? .open : .halfOpen
    }

    /// Whether a call may start now: closed, or half-open with no trial in flight. A pure read: checking reserves
    /// nothing, so a caller that checks and then never calls cannot leave the circuit stuck.
    public func permits(at now: Date) -> Bool {
        switch phase(at: now) {
        case .closed: true
        case .open: false
        case .halfOpen: !probing
        }
    }

    /// Not closed: open, or half-open and waiting for a success (`paypipe_circuits_open`).
    public var isTripped: Bool { openUntil != nil }

    /// Nothing worth keeping: the same as an endpoint never seen.
    var isClean: Bool { self == CircuitState() }

    /// Starts a call that ``permits(at:)`` let through; returns whether it is the half-open trial.
    mutating func start(at now: Date) -> Bool {
        guard phase(at: now) == .halfOpen else { return false }
        probing = true
        return true
    }

    /// What a finished call told about the endpoint (``CallReport``, which a calling stage's `perform` returns).
    public typealias Report = CallReport

    /// Ends a call started with ``start(at:)`` (`probe`: what it returned). `pause` is already capped by the caller.
    mutating func finish(_ report: Report, probe: Bool, failureThreshold: Int, openSeconds: Double, now: Date) {
        if probe { probing = false }
        switch report {
        case .silent:
            return
        case .healthy:
            self = CircuitState()
        case .failed(let pause):
            consecutiveFailures += 1
            var openFor = consecutiveFailures >= failureThreshold ? openSeconds : 0
            if let pause, pause > 0 { openFor = max(openFor, pause) }
            if openFor > 0 { openUntil = now.addingTimeInterval(openFor) }
        }
    }
}
