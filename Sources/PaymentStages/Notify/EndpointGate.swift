import Foundation
import Pipeline
import Synchronization

/// Per-endpoint concurrency limit and circuit breaker, shared by all lanes of one notify worker, so one slow or
/// failing merchant endpoint cannot occupy every lane and hold up deliveries to the others.
///
/// * At most `maxConcurrent` requests to one endpoint (`scheme://host:port`) at a time; a lane waits up to
///   `maxWait` seconds for a slot, then gives up with `endpoint_busy` (a transient failure: the message moves to
///   the next retry tier and the lane serves other endpoints).
/// * After `failureThreshold` consecutive failures the circuit opens for `openSeconds`: attempts fail at once with
///   `circuit_open` (no request is sent). Then one probe is let through (half-open); its success closes the circuit.
/// * With a rate (`PAYPIPE_WEBHOOK_RATE` or the merchant's `webhook.ratePerSecond`), at most that many requests per
///   second start to one endpoint (a ``TokenBucket`` with a one-second burst): a lane waits for its booked token,
///   or gives up with `rate_limited` when it is more than `maxWait` away (transient, like `endpoint_busy`). Neither
///   counts as a failure of the endpoint (breaker, endpoint health): the worker held the request back itself.
/// * A failed response with `Retry-After` (429/503 throttling) opens the circuit at once for that long, capped at
///   `maxPauseSeconds`: the worker stops calling an endpoint that asked for a pause.
/// * Endpoints are publisher-controlled (a job's `notify_url`), so the state map is bounded: an endpoint with nothing
///   in flight and a clean record is forgotten at once, and past `maxEndpoints` entries the idle ones (nothing in
///   flight, circuit not open) are dropped before a new endpoint is added, then any idle one.
public final class EndpointGate: Sendable {
    public let maxConcurrent: Int
    public let failureThreshold: Int
    public let openSeconds: Double
    public let maxWait: Double
    public let maxPauseSeconds: Double
    public let maxEndpoints: Int
    private let endpoints = Mutex<[String: EndpointState]>([:])
    private let clock: @Sendable () -> Date
    private let metrics = AttachedMetrics()

    private struct EndpointState {
        var inFlight = 0
        var circuit = CircuitState()
        var bucket: TokenBucket?
    }

    public enum Acquisition: Sendable, Equatable {
        /// A slot is held: call ``release(_:succeeded:)`` with this endpoint key.
        case acquired(String)
        /// `circuit_open`, `rate_limited` or `endpoint_busy`.
        case rejected(String)
    }

    public init(maxConcurrent: Int = 4, failureThreshold: Int = 5, openSeconds: Double = 30, maxWait: Double = 15,
                maxPauseSeconds: Double = 300, maxEndpoints: Int = 10_000, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.maxPauseSeconds = maxPauseSeconds
        self.maxEndpoints = max(1, maxEndpoints)
        self.maxConcurrent = max(1, maxConcurrent)
        self.failureThreshold = max(1, failureThreshold)
        self.openSeconds = openSeconds
        self.maxWait = maxWait
        self.clock = clock
    }

    /// - Parameter rate: requests per second allowed to start to this endpoint; `nil` or 0: no rate limit.
    public func acquire(endpoint: String, rate: Double? = nil) -> Acquisition {
        let deadline = Date().addingTimeInterval(maxWait)
        if let rate, rate > 0 {
            switch reserve(endpoint: endpoint, rate: rate) {
            case .refused?: return .rejected("rate_limited")
            case .after(let wait)? where wait > 0: Thread.sleep(forTimeInterval: wait)
            default: break
            }
        }
        while true {
            let now = clock()
            let verdict: Acquisition? = endpoints.withLock { states in
                if states[endpoint] == nil, states.count >= maxEndpoints { Self.prune(&states, now: now) }
                var state = states[endpoint] ?? EndpointState()
                defer { Self.store(state, for: endpoint, in: &states, now: now) }
                if state.circuit.isOpen(at: now) { return .rejected("circuit_open") }
                // Half-open: a single probe at a time.
                if state.circuit.isHalfOpen(at: now), state.inFlight > 0 { return .rejected("circuit_open") }
                guard state.inFlight < maxConcurrent else { return nil }
                state.inFlight += 1
                return .acquired(endpoint)
            }
            if let verdict { return verdict }
            if Date() >= deadline { return .rejected("endpoint_busy") }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// - Parameter pause: the failed response's `Retry-After` in seconds, if any.
    public func release(_ endpoint: String, succeeded: Bool, pause: Double? = nil) {
        let now = clock()
        endpoints.withLock { states in
            var state = states[endpoint] ?? EndpointState()
            state.inFlight = max(0, state.inFlight - 1)
            state.circuit.record(
                healthy: succeeded, failureThreshold: failureThreshold, openSeconds: openSeconds,
                pause: pause.map { min($0, maxPauseSeconds) }, now: now)
            Self.store(state, for: endpoint, in: &states, now: now)
            CircuitMetrics.report(metrics, stage: .notify, circuits: states.values.map(\.circuit))
        }
    }

    /// Books a token of the endpoint's bucket (created full, or retuned when the rate changed); `nil` while its
    /// circuit is open (the caller's next step rejects that).
    private func reserve(endpoint: String, rate: Double) -> TokenBucket.Reservation? {
        let now = clock()
        return endpoints.withLock { states in
            if states[endpoint] == nil, states.count >= maxEndpoints { Self.prune(&states, now: now) }
            var state = states[endpoint] ?? EndpointState()
            defer { Self.store(state, for: endpoint, in: &states, now: now) }
            if state.circuit.isOpen(at: now) { return nil }
            var bucket = state.bucket ?? TokenBucket(rate: rate, now: now)
            if bucket.rate != rate { bucket.retune(rate: rate, at: now) }
            let reservation = bucket.reserve(at: now, maxWait: maxWait)
            state.bucket = bucket
            return reservation
        }
    }

    /// Reports `paypipe_circuits_open{stage="notify"}` to the worker's registry.
    public func attach(metrics registry: MetricsRegistry) {
        CircuitMetrics.attach(metrics, to: registry, stage: .notify)
    }

    /// The number of endpoints with state (in flight, or a failure record): bounded by `maxEndpoints` plus those in flight.
    public var trackedEndpoints: Int { endpoints.withLock { $0.count } }

    /// Keeps only state that says something: an idle endpoint with a clean record and a full bucket is the same as an
    /// unknown one.
    private static func store(_ state: EndpointState, for endpoint: String, in states: inout [String: EndpointState], now: Date) {
        let forgettable = state.inFlight == 0 && state.circuit == CircuitState() && (state.bucket?.isFull(at: now) ?? true)
        states[endpoint] = forgettable ? nil : state
    }

    /// Makes room: drops idle endpoints whose circuit is not open, and if that freed nothing, every idle endpoint
    /// (forgetting an open circuit costs one more failed attempt, never a wrong delivery).
    private static func prune(_ states: inout [String: EndpointState], now: Date) {
        let before = states.count
        states = states.filter { $0.value.inFlight > 0 || $0.value.circuit.isOpen(at: now) }
        if states.count == before { states = states.filter { $0.value.inFlight > 0 } }
    }
}
