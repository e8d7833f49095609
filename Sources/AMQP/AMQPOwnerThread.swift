import Foundation

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
