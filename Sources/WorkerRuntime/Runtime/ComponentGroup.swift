import Dispatch
import Foundation
import Postgres
import Synchronization

/// A part of a worker with its own lifetime — the lanes, the reconciler, the consumer, the publisher, the observability
/// server: started once, asked to stop, then waited for until a deadline.
public protocol WorkerComponent: Sendable {
    var name: String { get }
    /// Starts the component; returns once it runs (its work goes on on its own threads).
    func start() throws
    /// Begins stopping and returns at once; idempotent.
    func requestStop()
    /// Blocks until the component stopped or `deadline` passed, and returns whether it stopped in time. Past the
    /// deadline it still releases what it holds (threads told to exit, connections closed).
    func waitUntilStopped(deadline: DispatchTime) -> Bool
}

/// A worker's components, in the style of swift-service-lifecycle's `ServiceGroup`: started in order, each after the
/// ones it uses (a start that fails stops those already started); stopped in **reverse** order, each only once the
/// components that use it have finished, all under **one** time limit.
public struct ComponentGroup: Sendable {
    public let components: [any WorkerComponent]

    public init(_ components: [any WorkerComponent]) {
        self.components = components
    }

    /// Starts every component in order. If one fails, those already started are stopped (in reverse order, within
    /// `rollbackTimeout`) and the error is rethrown.
    public func start(rollbackTimeout: Double = 10) throws {
        for (index, component) in components.enumerated() {
            do {
                try component.start()
            } catch {
                _ = Self.stop(components[..<index], deadline: .now() + rollbackTimeout)
                throw error
            }
        }
    }

    /// Asks the last component to stop (the one that uses all the others: it begins the shutdown). The rest are asked
    /// in order by ``stop(timeout:)``.
    public func requestStop() {
        components.last?.requestStop()
    }

    /// Stops every component in reverse order under one deadline, `timeout` seconds from now: each is asked to stop
    /// and waited for before the next. Returns the names of the components that did not stop in time (those after a
    /// late one are still stopped, with whatever time is left, which may be none).
    public func stop(timeout: Double) -> [String] {
        Self.stop(components[...], deadline: .now() + timeout)
    }

    private static func stop(_ components: ArraySlice<any WorkerComponent>, deadline: DispatchTime) -> [String] {
        var late: [String] = []
        for component in components.reversed() {
            component.requestStop()
            if !component.waitUntilStopped(deadline: deadline) { late.append(component.name) }
        }
        return late
    }
}

/// A component that runs `count` threads of `body` (each gets its index) until they return; `onStop` tells them to.
public final class ThreadsComponent: WorkerComponent {
    public let name: String
    private let count: Int
    private let body: @Sendable (Int) -> Void
    private let onStop: @Sendable () -> Void
    private let done = DispatchGroup()
    private let stopRequested = Mutex(false)

    public init(name: String, count: Int = 1, body: @escaping @Sendable (Int) -> Void, onStop: @escaping @Sendable () -> Void) {
        (self.name, self.count, self.body, self.onStop) = (name, count, body, onStop)
    }

    public func start() throws {
        for index in 0..<count {
            done.enter()
            let thread = Thread { [body, done] in
                body(index)
                done.leave()
            }
            thread.name = count == 1 ? name : "\(name)-\(index)"
            thread.start()
        }
    }

    public func requestStop() {
        let first = stopRequested.withLock { requested -> Bool in
            defer { requested = true }
            return !requested
        }
        if first { onStop() }
    }

    public func waitUntilStopped(deadline: DispatchTime) -> Bool {
        done.wait(timeout: deadline) == .success
    }
}

/// A component whose stop is one call that releases it (closing a connection, stopping a server): `start` and `close`.
public final class ClosingComponent: WorkerComponent {
    public let name: String
    private let opening: @Sendable () throws -> Void
    private let closing: @Sendable () -> Void
    private let closed = Mutex(false)

    public init(name: String, start: @escaping @Sendable () throws -> Void = {}, close: @escaping @Sendable () -> Void) {
        (self.name, self.opening, self.closing) = (name, start, close)
    }

    public func start() throws { try opening() }

    public func requestStop() {}

    /// Closes (once); whatever its own bounded time, a close counts as in time: it releases, it does not drain.
    public func waitUntilStopped(deadline: DispatchTime) -> Bool {
        let first = closed.withLock { closed -> Bool in
            defer { closed = true }
            return !closed
        }
        if first { closing() }
        return true
    }
}

/// What the runtime lends the stage side's own components of a worker (``StageRuntime``'s `components`): the worker's
/// configuration, logger and metrics, a database connection kept per thread the way the lanes keep theirs (reconnecting,
/// reporting `paypipe_database_up`), publishing hand-offs with confirms, and whether the worker is stopping.
public struct WorkerContext: Sendable {
    public let configuration: WorkerConfiguration
    public let logger: Logger
    public let metrics: StageMetrics
    private let connecting: @Sendable (inout PostgresConnection?) -> PostgresConnection?
    private let reachable: @Sendable () -> Void
    private let publishing: @Sendable ([HandOffMessage]) -> Bool
    private let stopping: @Sendable () -> Bool

    public init(
        configuration: WorkerConfiguration, logger: Logger, metrics: StageMetrics,
        connect: @escaping @Sendable (inout PostgresConnection?) -> PostgresConnection?, databaseReachable: @escaping @Sendable () -> Void,
        publish: @escaping @Sendable ([HandOffMessage]) -> Bool, isStopRequested: @escaping @Sendable () -> Bool
    ) {
        (self.configuration, self.logger, self.metrics) = (configuration, logger, metrics)
        (connecting, reachable, publishing, stopping) = (connect, databaseReachable, publish, isStopRequested)
    }

    /// `database` if still connected, else a new connection (kept in `database`); `nil` while the database is down.
    public func connected(_ database: inout PostgresConnection?) -> PostgresConnection? { connecting(&database) }

    /// A database operation succeeded: `/healthz` and `paypipe_database_up` recover on an idle worker too.
    public func databaseReachable() { reachable() }

    /// Publishes the hand-offs with confirms, retrying through broker outages; `false` only when stopping first.
    public func publish(_ handOffs: [HandOffMessage]) -> Bool { publishing(handOffs) }

    public var isStopRequested: Bool { stopping() }
}
