import Foundation
import Pipeline
import Synchronization

/// A circuit breaker per gateway endpoint: after `failureThreshold` consecutive transport failures the endpoint is
/// "open" for `openSeconds`, during which no request is sent to it — payments stay `prepared` (or `submitting`) and
/// park in the runtime's retry tiers instead of each burning a connect timeout. After that, requests are let through
/// again (half-open): the first success closes the circuit, the first failure re-opens it at once.
///
/// The check is a pure read (no trial reservation), so a caller that checks and then fails before calling — a
/// database error, a retried transaction — cannot leave the circuit stuck.
///
/// Only failures that say nothing about the payment count (connection refused, timeouts, resets, 5xx): a decline
/// or a field error is a healthy gateway.
public final class GatewayCircuitBreaker: Sendable {
    public let failureThreshold: Int
    public let openSeconds: Double

    private let circuits = Mutex<[String: CircuitState]>([:])
    private let metrics = AttachedMetrics()

    public init(failureThreshold: Int = 5, openSeconds: Double = 30) {
        self.failureThreshold = max(1, failureThreshold)
        self.openSeconds = openSeconds
    }

    /// Whether a request to `endpoint` may be sent now (closed, or half-open after the cool-down).
    public func permits(_ endpoint: String, now: Date = Date()) -> Bool {
        circuits.withLock { !($0[endpoint]?.isOpen(at: now) ?? false) }
    }

    /// Reports how a request to `endpoint` went.
    public func record(_ endpoint: String, healthy: Bool, now: Date = Date()) {
        circuits.withLock {
            $0[endpoint, default: CircuitState()].record(
                healthy: healthy, failureThreshold: failureThreshold, openSeconds: openSeconds, now: now)
            CircuitMetrics.report(metrics, stage: .submit, circuits: $0.values)
        }
    }

    /// Reports `paypipe_circuits_open{stage="submit"}` to the worker's registry.
    public func attach(metrics registry: MetricsRegistry) {
        CircuitMetrics.attach(metrics, to: registry, stage: .submit)
    }

    /// Whether a result is an endpoint-health failure (as opposed to an answer about the payment).
    static func isEndpointFailure(_ code: String?) -> Bool {
        guard let code else { return false }
        return code == "paypipe.transport" || (code.hasPrefix("paypipe.http_5"))
    }
}
