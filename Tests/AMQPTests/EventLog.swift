import Synchronization
@testable import AMQP

/// Collects the `AMQPEvent`s of a publisher or consumer for assertions.
final class EventLog: Sendable {
    private let events = Mutex<[AMQPEvent]>([])

    var handler: @Sendable (AMQPEvent) -> Void {
        { [self] event in events.withLock { $0.append(event) } }
    }

    var connectedGenerations: [UInt64] {
        events.withLock { $0.compactMap { if case .connected(let generation) = $0 { generation } else { nil } } }
    }

    var disconnectReasons: [String] {
        events.withLock { $0.compactMap { if case .disconnected(let reason) = $0 { reason } else { nil } } }
    }

    var reconnectAttempts: [Int] {
        events.withLock {
            $0.compactMap { if case .reconnectScheduled(let attempt, _) = $0 { attempt } else { nil } }
        }
    }
}
