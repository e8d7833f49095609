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
        #if DEBUG
        /// Fault injection for tests (debug builds only): drop the connection after this many further publishes.
        var dropConnectionAfter: Int?
        #endif
        var reconnectRequested = false
    }

    /// What the owner thread takes from the shared state at the top of each loop iteration.
    struct Commands {
        var requests: [AMQPPublishRequest]
        var shutdown: Bool
        #if DEBUG
        var dropConnectionAfter: Int?
        #endif
        var reconnect = false
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
                #if DEBUG
                state.dropConnectionAfter = nil
                #endif
                state.reconnectRequested = false
            }
            var commands = Commands(requests: state.submitted, shutdown: state.shutdown, reconnect: state.reconnectRequested)
            #if DEBUG
            commands.dropConnectionAfter = state.dropConnectionAfter
            #endif
            return commands
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

    #if DEBUG
    func requestConnectionDrop(afterPublishes count: Int) {
        shared.withLock { $0.dropConnectionAfter = count }
        wakeup.signal()
    }
    #endif

    var isConnected: Bool {
        get { shared.withLock { $0.connected } }
    }

    func setConnected(_ connected: Bool) {
        shared.withLock { $0.connected = connected }
    }
}
