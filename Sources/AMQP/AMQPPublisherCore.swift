import Synchronization

/// State shared between the `AMQPPublisher` facade (any thread) and its owner thread.
final class AMQPPublisherCore: AMQPOwnerCore {
    let configuration: AMQPConfiguration
    let topology: AMQPTopology
    let onEvent: @Sendable (AMQPEvent) -> Void
    let wakeup = AMQPWakeup()
    private let shared = Mutex(Shared())

    struct Shared {
        var submitted: [AMQPPublishRequest] = []
        var shutdown = false
        var connected = false
        /// Fault injection for tests: drop the connection after this many further publishes.
        var dropConnectionAfter: Int?
        var reconnectRequested = false
    }

    /// What the owner thread takes from the shared state at the top of each loop iteration.
    struct Commands {
        var requests: [AMQPPublishRequest]
        var shutdown: Bool
        var dropConnectionAfter: Int?
        var reconnect: Bool
    }

    init(configuration: AMQPConfiguration, topology: AMQPTopology, onEvent: @escaping @Sendable (AMQPEvent) -> Void) {
        self.configuration = configuration
        self.topology = topology
        self.onEvent = onEvent
    }

    /// Queues a request for the owner thread; false once the publisher is closed.
    func submit(_ request: AMQPPublishRequest) -> Bool {
        let accepted = shared.withLock { state -> Bool in
            guard !state.shutdown else { return false }
            state.submitted.append(request)
            return true
        }
        if accepted { wakeup.signal() }
        return accepted
    }

    func takeCommands() -> Commands {
        shared.withLock { state in
            defer {
                state.submitted.removeAll()
                state.dropConnectionAfter = nil
                state.reconnectRequested = false
            }
            return Commands(requests: state.submitted, shutdown: state.shutdown,
                            dropConnectionAfter: state.dropConnectionAfter, reconnect: state.reconnectRequested)
        }
    }

    func requestShutdown() {
        shared.withLock { $0.shutdown = true }
        wakeup.signal()
    }

    func requestReconnect() {
        shared.withLock { $0.reconnectRequested = true }
        wakeup.signal()
    }

    func requestConnectionDrop(afterPublishes count: Int) {
        shared.withLock { $0.dropConnectionAfter = count }
        wakeup.signal()
    }

    var isConnected: Bool {
        get { shared.withLock { $0.connected } }
    }

    func setConnected(_ connected: Bool) {
        shared.withLock { $0.connected = connected }
    }
}
