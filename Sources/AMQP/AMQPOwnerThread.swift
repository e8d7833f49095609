import Foundation

/// What a connection's owner thread needs from the state it shares with its facade (publisher or
/// consumer): the connection settings, where to report events, and the pipe that wakes it.
protocol AMQPOwnerCore: Sendable {
    var configuration: AMQPConfiguration { get }
    var onEvent: @Sendable (AMQPEvent) -> Void { get }
    var wakeup: AMQPWakeup { get }
}

/// The dedicated thread that owns one rabbitmq-c connection, with a bounded join.
final class AMQPOwnerThread: Sendable {
    private let finished = DispatchSemaphore(value: 0)

    init(name: String, body: @escaping @Sendable () -> Void) {
        let finished = finished
        let thread = Thread {
            body()
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Waits until the thread has returned; false on timeout. Safe to call more than once.
    @discardableResult
    func join(timeoutSeconds: Double) -> Bool {
        guard finished.wait(timeout: .now() + timeoutSeconds) == .success else { return false }
        finished.signal()
        return true
    }
}
