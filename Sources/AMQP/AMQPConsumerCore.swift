import Foundation
import Synchronization

/// State shared between the `AMQPConsumer` facade (any thread) and its owner thread: the buffer of
/// received deliveries, the queue of settlements, and stop/shutdown requests.
final class AMQPConsumerCore: AMQPOwnerCore {
    let configuration: AMQPConfiguration
    let topology: AMQPTopology
    let queue: String
    let prefetch: UInt16
    let onEvent: @Sendable (AMQPEvent) -> Void
    let wakeup = AMQPWakeup()
    private let shared = Mutex(Shared())

    struct Shared {
        /// Received, not yet handed to the application; bounded by the prefetch count.
        var deliveries: [AMQPDelivery] = []
        /// One semaphore per `receive` call waiting for the buffer to fill.
        var receivers: [DispatchSemaphore] = []
        var settlements: [AMQPSettlement] = []
        var stopRequested = false
        var stopWaiters: [DispatchSemaphore] = []
        var shutdown = false
        var connected = false
        /// `basic.consume` is in force on the current connection (false after `stopConsuming` or a disconnect).
        var consuming = false
        var generation: UInt64 = 0
        #if DEBUG
        var dropConnectionRequested = false
        #endif
    }

    /// What the owner thread takes from the shared state at the top of each loop iteration.
    struct Commands {
        var settlements: [AMQPSettlement]
        var stopRequested: Bool
        var stopWaiters: [DispatchSemaphore]
        var shutdown: Bool
        #if DEBUG
        var dropConnection = false
        #endif
    }

    init(configuration: AMQPConfiguration, topology: AMQPTopology, queue: String, prefetch: UInt16,
         onEvent: @escaping @Sendable (AMQPEvent) -> Void) {
        self.configuration = configuration
        self.topology = topology
        self.queue = queue
        self.prefetch = prefetch
        self.onEvent = onEvent
    }

    // MARK: - Application side

    /// Waits up to `timeout` seconds for the first delivery, then returns up to `maxCount` buffered ones.
    func receive(maxCount: Int, timeout: Double) -> [AMQPDelivery] {
        guard maxCount > 0 else { return [] }
        let deadline: DispatchTime = timeout.isFinite ? .now() + max(0, timeout) : .distantFuture
        while true {
            let (batch, waiter) = shared.withLock { state -> ([AMQPDelivery], DispatchSemaphore?) in
                let batch = Self.take(maxCount, from: &state)
                if !batch.isEmpty || state.shutdown { return (batch, nil) }
                let waiter = DispatchSemaphore(value: 0)
                state.receivers.append(waiter)
                return ([], waiter)
            }
            guard let waiter else { return batch }
            if waiter.wait(timeout: deadline) == .timedOut {
                return shared.withLock { state in
                    state.receivers.removeAll { $0 === waiter }
                    return Self.take(maxCount, from: &state)
                }
            }
        }
    }

    /// Queues a settlement unless its delivery belongs to a connection that is gone: its tag would
    /// name a different message on the new channel, and the broker has requeued it anyway.
    func settle(_ settlement: AMQPSettlement) {
        settle([settlement])
    }

    func settle(_ settlements: [AMQPSettlement]) {
        let queued = shared.withLock { state -> Bool in
            guard !state.shutdown, state.connected else { return false }
            let current = settlements.filter { $0.generation == state.generation }
            state.settlements.append(contentsOf: current)
            return !current.isEmpty
        }
        if queued { wakeup.signal() }
    }

    /// Asks the owner thread to cancel the consumer; waits until it did (or `timeout` passes).
    func requestStop(timeout: Double) {
        let waiter = DispatchSemaphore(value: 0)
        let wait = shared.withLock { state -> Bool in
            state.stopRequested = true
            guard !state.shutdown, timeout > 0 else { return false }
            state.stopWaiters.append(waiter)
            return true
        }
        wakeup.signal()
        if wait { _ = waiter.wait(timeout: .now() + timeout) }
    }

    func requestShutdown() {
        let receivers = shared.withLock { state -> [DispatchSemaphore] in
            state.shutdown = true
            defer { state.receivers.removeAll() }
            return state.receivers
        }
        for receiver in receivers { receiver.signal() }
        wakeup.signal()
    }

    #if DEBUG
    func requestConnectionDrop() {
        shared.withLock { $0.dropConnectionRequested = true }
        wakeup.signal()
    }
    #endif

    var isConnected: Bool { shared.withLock { $0.connected } }

    var isConsuming: Bool { shared.withLock { $0.connected && $0.consuming } }

    func setConsuming(_ consuming: Bool) {
        shared.withLock { $0.consuming = consuming }
    }

    var isShutdown: Bool { shared.withLock { $0.shutdown } }

    // MARK: - Owner-thread side

    func takeCommands() -> Commands {
        shared.withLock { state in
            defer {
                state.settlements.removeAll(keepingCapacity: true)
                state.stopWaiters.removeAll()
                #if DEBUG
                state.dropConnectionRequested = false
                #endif
            }
            var commands = Commands(settlements: state.settlements, stopRequested: state.stopRequested,
                                    stopWaiters: state.stopWaiters, shutdown: state.shutdown)
            #if DEBUG
            commands.dropConnection = state.dropConnectionRequested
            #endif
            return commands
        }
    }

    /// Buffers deliveries of the current connection and wakes the waiting receivers.
    func deliver(_ deliveries: [AMQPDelivery]) {
        guard !deliveries.isEmpty else { return }
        let receivers = shared.withLock { state -> [DispatchSemaphore] in
            state.deliveries.append(contentsOf: deliveries)
            defer { state.receivers.removeAll() }
            return state.receivers
        }
        for receiver in receivers { receiver.signal() }
    }

    func setConnected(generation: UInt64, consuming: Bool) {
        shared.withLock { state in
            state.connected = true
            state.consuming = consuming
            state.generation = generation
        }
    }

    /// Forgets buffered deliveries and queued settlements of the lost connection (the broker requeues
    /// those messages).
    func setDisconnected() {
        shared.withLock { state in
            state.connected = false
            state.consuming = false
            state.deliveries.removeAll()
            state.settlements.removeAll()
        }
    }

    private static func take(_ maxCount: Int, from state: inout Shared) -> [AMQPDelivery] {
        let count = min(maxCount, state.deliveries.count)
        guard count > 0 else { return [] }
        let batch = Array(state.deliveries[..<count])
        state.deliveries.removeFirst(count)
        return batch
    }
}
