import Dispatch
import Foundation
import Synchronization

/// The one gate of the call-out phase, shared by every lane of a worker: before a call leaves, its endpoint's
/// circuit, its endpoint's rate and its owner's concurrency slots must let it through; after it, its report
/// (healthy, failed with an optional `Retry-After` pause, or silent) goes to the circuit. The rules are
/// ``EndpointGateState``'s, a value; this type adds the lock and the waiting.
///
/// A call that finds no free slot sleeps until one is handed to it by a call that ends, or its timeout passes; it
/// never polls: a worker has many more pool threads than one owner has slots, and threads waking every millisecond
/// to look cost more CPU than the calls themselves. A booked rate token is waited for by sleeping until it is due.
///
/// Every ``acquire(_:rate:timeout:)`` that returns a permit must be matched by one ``release(_:report:)``.
public final class EndpointGate: Sendable {
    public typealias Call = EndpointGateState.Call
    public typealias Refusal = EndpointGateState.Refusal

    public let policy: EndpointGatePolicy
    private let shared: Mutex<Shared>
    private let clock: @Sendable () -> Date
    private let metrics = AttachedMetrics()
    private let stage: StageName

    private enum Entered {
        case answered(Acquisition)
        case waiting(ticket: Int, semaphore: DispatchSemaphore)
    }

    private struct Shared {
        var state: EndpointGateState
        var nextTicket = 0
        var sleepers: [Int: DispatchSemaphore] = [:]
    }

    /// A held slot: give it back with ``release(_:report:)``.
    public struct Permit: Sendable, Equatable {
        public let call: Call
        /// The half-open circuit's trial.
        public let probe: Bool
    }

    public enum Acquisition: Sendable, Equatable {
        case acquired(Permit)
        case refused(Refusal)
    }

    /// - Parameters:
    ///   - policy: the limits; by default ``EndpointGatePolicy``'s own (a worker passes its configured ones).
    ///   - stage: the `stage` label of its `paypipe_circuits_open` series.
    public init(policy: EndpointGatePolicy = EndpointGatePolicy(), stage: StageName, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.policy = policy
        self.stage = stage
        self.clock = clock
        shared = Mutex(Shared(state: EndpointGateState(policy: policy)))
    }

    /// Whether `endpoint`'s circuit lets a call start now; reserves nothing (for planning a call before making it).
    public func permits(_ endpoint: String) -> Bool {
        let now = clock()
        return shared.withLock { $0.state.permits(endpoint, at: now) }
    }

    /// Waits up to `timeout` seconds (``EndpointGatePolicy/maxWait`` by default), for a booked rate token (`rate` per
    /// second, `nil` or 0: none) and then a slot.
    public func acquire(_ call: Call, rate: Double? = nil, timeout: Double? = nil) -> Acquisition {
        let timeout = max(0, timeout ?? policy.maxWait)
        let deadline = DispatchTime.now() + timeout
        if let rate, rate > 0 {
            let now = clock()
            switch shared.withLock({ $0.state.book(call.endpoint, rate: rate, maxWait: timeout, at: now) }) {
            case .refused(let refusal): return .refused(refusal)
            case .after(let wait) where wait > 0: Thread.sleep(forTimeInterval: wait)
            case .after: break
            }
        }
        let now = clock()
        let entered: Entered = shared.withLock { shared in
            let ticket = shared.nextTicket
            shared.nextTicket &+= 1
            switch shared.state.enter(call, ticket: ticket, at: now) {
            case .admitted(let probe): return .answered(.acquired(Permit(call: call, probe: probe)))
            case .refused(let refusal): return .answered(.refused(refusal))
            case .queued:
                // Only a call that must wait gets a semaphore, registered before the lock is released.
                let semaphore = DispatchSemaphore(value: 0)
                shared.sleepers[ticket] = semaphore
                return .waiting(ticket: ticket, semaphore: semaphore)
            }
        }
        let ticket: Int, semaphore: DispatchSemaphore
        switch entered {
        case .answered(let acquisition): return acquisition
        case .waiting(let waiting, let sleeper): (ticket, semaphore) = (waiting, sleeper)
        }
        if semaphore.wait(timeout: deadline) == .timedOut {
            let left = shared.withLock { shared in
                guard shared.state.cancel(call, ticket: ticket) else { return false }
                shared.sleepers[ticket] = nil
                return true
            }
            if left { return .refused(.busy) }
            // A slot was handed over while the wait timed out: its signal is on its way, and the slot is ours.
            semaphore.wait()
        }
        let handedAt = clock()
        let (handed, next) = shared.withLock { shared in
            let (entry, next) = shared.state.admitHanded(call, at: handedAt)
            return (entry, next.flatMap { shared.sleepers.removeValue(forKey: $0) })
        }
        next?.signal()
        if case .admitted(let probe) = handed { return .acquired(Permit(call: call, probe: probe)) }
        return .refused(.circuitOpen)
    }

    /// Gives the slot back (to the first waiter, if any) and reports how the call went.
    public func release(_ permit: Permit, report: CallReport) {
        let now = clock()
        let (next, tripped) = shared.withLock { shared in
            let next = shared.state.leave(permit.call, probe: permit.probe, report: report, at: now)
            return (next.flatMap { shared.sleepers.removeValue(forKey: $0) }, shared.state.trippedCircuits)
        }
        next?.signal()
        metrics.report { $0.set(CircuitMetrics.open, labels: ["stage": stage.rawValue], to: Double(tripped)) }
    }

    /// Reports `paypipe_circuits_open{stage}` to the worker's registry.
    public func attach(metrics registry: MetricsRegistry) {
        CircuitMetrics.attach(metrics, to: registry, stage: stage)
    }

    /// Calls holding a slot of `owner`.
    public func inFlight(_ owner: String) -> Int { shared.withLock { $0.state.inFlight(owner) } }

    /// Endpoints and owners with state (bounded, see ``EndpointGatePolicy/maxEndpoints``).
    public var trackedKeys: Int { shared.withLock { $0.state.trackedKeys } }
}

/// `paypipe_circuits_open{stage}`: how many endpoints' circuits a worker's ``EndpointGate`` holds not closed (open,
/// or half-open and waiting for a success) — the gateway's in submit, the webhook endpoints' in notify. 0 from the
/// start.
enum CircuitMetrics {
    static let open = "paypipe_circuits_open"

    static func attach(_ metrics: AttachedMetrics, to registry: MetricsRegistry, stage: StageName) {
        metrics.attach(registry) { registry in
            registry.register(open, kind: .gauge, help: "Endpoints whose circuit is open or half-open (not yet closed by a success).")
            registry.set(open, labels: ["stage": stage.rawValue], to: 0)
        }
    }
}
