import Foundation

/// The limits of an ``EndpointGate``: the same for every stage that calls out, set from each stage's environment.
public struct EndpointGatePolicy: Sendable, Equatable {
    /// Calls in flight at once per slot owner (an endpoint, or a merchant).
    public var maxConcurrent: Int
    /// Consecutive endpoint failures that open its circuit.
    public var failureThreshold: Int
    /// Seconds an opened circuit refuses calls before its half-open trial.
    public var openSeconds: Double
    /// The longest `Retry-After` obeyed by pausing the endpoint.
    public var maxPauseSeconds: Double
    /// Endpoints with a remembered circuit or rate (they may come from publishers, so the state is bounded).
    public var maxEndpoints: Int
    /// Seconds a call waits for its rate token and a slot before it is refused (`rateLimited`, `busy`).
    public var maxWait: Double

    public init(maxConcurrent: Int = 4, failureThreshold: Int = 5, openSeconds: Double = 30, maxPauseSeconds: Double = 300,
                maxEndpoints: Int = 10_000, maxWait: Double = 15) {
        self.maxWait = max(0, maxWait)
        self.maxConcurrent = max(1, maxConcurrent)
        self.failureThreshold = max(1, failureThreshold)
        self.openSeconds = openSeconds
        self.maxPauseSeconds = maxPauseSeconds
        self.maxEndpoints = max(1, maxEndpoints)
    }
}

/// Everything an ``EndpointGate`` decides, as a value: circuits per endpoint, concurrency slots per owner with their
/// queue of waiters, token buckets per endpoint. The caller passes the time and chooses the waiters' tickets, so
/// every rule is tested with a hand-moved clock and no threads; the gate only adds the lock and the sleeping.
///
/// A call names its `endpoint` (the circuit and the rate) and its slot `owner`: the endpoint itself for webhooks, the
/// merchant for gateway calls (merchants share the gateway's URL, and one slow merchant must not take the others'
/// slots).
public struct EndpointGateState: Sendable {
    public let policy: EndpointGatePolicy
    private var endpoints: [String: Endpoint] = [:]
    private var slots: [String: Slots] = [:]

    private struct Endpoint {
        var circuit = CircuitState()
        var bucket: TokenBucket?
    }

    private struct Slots {
        var inFlight = 0
        /// Tickets of the calls waiting for a slot, first come first served.
        var waiting: [Int] = []
    }

    public init(policy: EndpointGatePolicy) {
        self.policy = policy
    }

    public struct Call: Sendable, Hashable {
        public var endpoint: String
        public var owner: String

        public init(endpoint: String, owner: String? = nil) {
            self.endpoint = endpoint
            self.owner = owner ?? endpoint
        }
    }

    /// Why a call was not let through. Nothing was sent, and none of them counts as a failure of the endpoint: the
    /// worker held the call back itself.
    public enum Refusal: Sendable, Equatable {
        /// The endpoint's circuit is open, or half-open with its trial in flight.
        case circuitOpen
        /// The endpoint's next free token is further away than the caller waits.
        case rateLimited
        /// No slot of the owner came free within the caller's wait.
        case busy
    }

    public enum Booking: Sendable, Equatable {
        /// A token is booked: send after this many seconds (0: at once).
        case after(Double)
        case refused(Refusal)
    }

    public enum Entry: Sendable, Equatable {
        /// A slot is held; `probe`: the call is the half-open circuit's trial.
        case admitted(probe: Bool)
        case refused(Refusal)
        /// Every slot is taken: the ticket waits for ``leave(_:probe:report:at:)`` to hand it one.
        case queued
    }

    /// Whether `endpoint`'s circuit lets a call start now (a pure read, for planning a call before making it).
    public func permits(_ endpoint: String, at now: Date) -> Bool {
        endpoints[endpoint]?.circuit.permits(at: now) ?? true
    }

    /// Books a token of the endpoint's bucket (created full, or retuned when the rate changed): the seconds to wait
    /// before sending, or why not. A refusal books nothing.
    public mutating func book(_ endpoint: String, rate: Double, maxWait: Double, at now: Date) -> Booking {
        guard permits(endpoint, at: now) else { return .refused(.circuitOpen) }
        var state = remembered(endpoint, at: now)
        var bucket = state.bucket ?? TokenBucket(rate: rate, now: now)
        if bucket.rate != rate { bucket.retune(rate: rate, at: now) }
        let reservation = bucket.reserve(at: now, maxWait: maxWait)
        state.bucket = bucket
        store(state, for: endpoint, at: now)
        switch reservation {
        case .after(let wait): return .after(wait)
        case .refused: return .refused(.rateLimited)
        }
    }

    /// A call asks for a slot. With every slot taken, or others already waiting (first come first served), it queues.
    public mutating func enter(_ call: Call, ticket: Int, at now: Date) -> Entry {
        guard permits(call.endpoint, at: now) else { return .refused(.circuitOpen) }
        var owner = slots[call.owner] ?? Slots()
        defer { slots[call.owner] = owner }
        guard owner.inFlight < policy.maxConcurrent, owner.waiting.isEmpty else {
            owner.waiting.append(ticket)
            return .queued
        }
        owner.inFlight += 1
        return .admitted(probe: start(call.endpoint, at: now))
    }

    /// A queued call stops waiting (its time is up): `true` when it left the queue, `false` when a slot was already
    /// handed to it (it then holds the slot and goes on with ``admitHanded(_:at:)``).
    public mutating func cancel(_ call: Call, ticket: Int) -> Bool {
        guard var owner = slots[call.owner], let index = owner.waiting.firstIndex(of: ticket) else { return false }
        owner.waiting.remove(at: index)
        keep(owner, for: call.owner)
        return true
    }

    /// A queued call that was handed a slot: the circuit decides again, since it may have opened meanwhile. A refusal
    /// gives the slot on, and returns the ticket it went to.
    public mutating func admitHanded(_ call: Call, at now: Date) -> (entry: Entry, handedTo: Int?) {
        guard permits(call.endpoint, at: now) else {
            return (.refused(.circuitOpen), handOn(call.owner))
        }
        return (.admitted(probe: start(call.endpoint, at: now)), nil)
    }

    /// A call that held a slot ended: its report goes to the circuit, and its slot to the first waiter (whose ticket
    /// is returned) or back to the pool.
    public mutating func leave(_ call: Call, probe: Bool, report: CallReport, at now: Date) -> Int? {
        var state = remembered(call.endpoint, at: now)
        var capped = report
        if case .failed(let pause?) = report { capped = .failed(pause: min(pause, policy.maxPauseSeconds)) }
        state.circuit.finish(capped, probe: probe, failureThreshold: policy.failureThreshold, openSeconds: policy.openSeconds, now: now)
        store(state, for: call.endpoint, at: now)
        return handOn(call.owner)
    }

    /// Endpoints whose circuit is not closed (`paypipe_circuits_open`).
    public var trippedCircuits: Int { endpoints.values.filter(\.circuit.isTripped).count }

    /// Endpoints and owners with state: bounded by ``EndpointGatePolicy/maxEndpoints`` plus the calls in flight.
    public var trackedKeys: Int { Set(endpoints.keys).union(slots.keys).count }

    /// Calls holding a slot of `owner`.
    public func inFlight(_ owner: String) -> Int { slots[owner]?.inFlight ?? 0 }

    // MARK: Internals

    private mutating func start(_ endpoint: String, at now: Date) -> Bool {
        guard var state = endpoints[endpoint] else { return false }
        let probe = state.circuit.start(at: now)
        endpoints[endpoint] = state
        return probe
    }

    /// The owner's slot goes to its first waiter, or back to the pool.
    private mutating func handOn(_ ownerKey: String) -> Int? {
        guard var owner = slots[ownerKey] else { return nil }
        defer { keep(owner, for: ownerKey) }
        if !owner.waiting.isEmpty { return owner.waiting.removeFirst() }
        owner.inFlight = max(0, owner.inFlight - 1)
        return nil
    }

    private mutating func keep(_ owner: Slots, for key: String) {
        slots[key] = owner.inFlight == 0 && owner.waiting.isEmpty ? nil : owner
    }

    /// The endpoint's state, making room first when it is new and the map is full: the endpoints whose circuit is
    /// neither open nor on trial are forgotten, then, if that freed nothing, every one not on trial (forgetting an
    /// open circuit costs one more failed call, never a wrong one; a forgotten bucket starts full again).
    private mutating func remembered(_ endpoint: String, at now: Date) -> Endpoint {
        if let known = endpoints[endpoint] { return known }
        if endpoints.count >= policy.maxEndpoints {
            let before = endpoints.count
            endpoints = endpoints.filter { $0.value.circuit.probing || $0.value.circuit.phase(at: now) == .open }
            if endpoints.count == before { endpoints = endpoints.filter { $0.value.circuit.probing } }
        }
        return Endpoint()
    }

    /// Keeps only state that says something: a clean circuit with a full bucket is the same as an unknown endpoint.
    private mutating func store(_ state: Endpoint, for endpoint: String, at now: Date) {
        let forgettable = state.circuit.isClean && (state.bucket?.isFull(at: now) ?? true)
        endpoints[endpoint] = forgettable ? nil : state
    }
}
