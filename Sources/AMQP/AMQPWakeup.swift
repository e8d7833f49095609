import Foundation
import Synchronization

/// Lets application threads interrupt an owner loop that sleeps in `poll(2)` on its AMQP socket.
///
/// A self-pipe: the read end is polled next to the socket, so queued acks and publishes are executed
/// immediately instead of after the poll timeout. Signals are coalesced: only the first `signal()`
/// after a `drain()` writes a byte.
final class AMQPWakeup: Sendable {
    let readDescriptor: Int32
    private let writeDescriptor: Int32
    private let pending = Atomic<Bool>(false)

    init() {
        var descriptors: [Int32] = [-1, -1]
        guard pipe(&descriptors) == 0 else {
            fatalError("pipe() failed (errno \(errno)): out of file descriptors")
        }
        for descriptor in descriptors {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
        readDescriptor = descriptors[0]
        writeDescriptor = descriptors[1]
    }

    deinit {
        close(readDescriptor)
        close(writeDescriptor)
    }

    func signal() {
        guard !pending.exchange(true, ordering: .sequentiallyConsistent) else { return }
        var byte: UInt8 = 1
        _ = write(writeDescriptor, &byte, 1)
    }

    /// Called by the owner loop after waking up, before it looks at its command queue again.
    ///
    /// Order matters: empty the pipe first, then clear `pending`. Clearing first would let a
    /// concurrent `signal()` write a byte that this drain then swallows, leaving `pending` set with
    /// an empty pipe, so every later signal would be suppressed and the owner would only wake on
    /// socket traffic or its poll timeout. In this order a suppressed signal always belongs to a
    /// command queued before `pending` was cleared, which the owner picks up right after.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readDescriptor, &buffer, buffer.count) > 0 {}
        pending.store(false, ordering: .sequentiallyConsistent)
    }
}
