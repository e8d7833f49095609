/// The consumer's owner-thread loop: the only code that touches its `AMQPConnection`.
///
/// Each iteration executes the queued settlements, handles stop/shutdown, (re)connects if needed
/// (declare topology, `basic.qos`, `basic.consume`), sleeps in `poll(2)` for at most a quarter
/// heartbeat and moves whatever arrived into the shared buffer. The application never blocks this
/// thread, so heartbeats keep flowing however long it takes to process a batch.
final class AMQPConsumerWorker {
    private static let maxFramesPerRead = 1024

    private let core: AMQPConsumerCore
    private let supervisor: AMQPConnectionSupervisor
    private var consumerTag: String?
    private var stopped = false
    /// Delivery tags of the current connection not yet settled: settling an unknown or already
    /// settled tag is a channel error that would close the channel and requeue everything in flight.
    private var outstanding = Set<UInt64>()

    init(core: AMQPConsumerCore) {
        self.core = core
        supervisor = AMQPConnectionSupervisor(core: core)
    }

    func run() {
        while true {
            let commands = core.takeCommands()
            if let connection = supervisor.connection {
                execute(commands.settlements, on: connection)
                #if DEBUG
                if commands.dropConnection { supervisor.connection?.simulateNetworkFailure() }
                #endif
            }
            if commands.stopRequested && !stopped { stopConsuming() }
            for waiter in commands.stopWaiters { waiter.signal() }
            if commands.shutdown {
                // Cancel before closing: on RabbitMQ 3.10 quorum queues, acks sent right before a
                // connection.close were observed to be dropped (the messages came back), while a
                // basic.cancel round trip first lets them all be applied.
                if !stopped { stopConsuming() }
                supervisor.close()
                core.setDisconnected()
                return
            }
            connectIfNeeded()
            supervisor.waitForActivity()
            readIncoming()
        }
    }

    private func connectIfNeeded() {
        let core = core
        _ = supervisor.connectIfDue(
            prepare: { (connection: AMQPConnection) throws(AMQPError) in
                try connection.declare(core.topology)
                if !stopped {
                    consumerTag = try connection.startConsuming(queue: core.queue, prefetch: core.prefetch)
                }
            },
            didConnect: { generation in
                outstanding.removeAll()
                core.setConnected(generation: generation, consuming: consumerTag != nil)
            })
    }

    private func readIncoming() {
        guard let connection = supervisor.connection else { return }
        var batch: [AMQPDelivery] = []
        for _ in 0..<Self.maxFramesPerRead {
            let frame: AMQPIncomingFrame?
            do {
                frame = try connection.poll()
            } catch {
                connectionLost(error)
                return
            }
            switch frame {
            case nil:
                core.deliver(batch)
                return
            case .delivery(let delivery)?:
                outstanding.insert(delivery.deliveryTag)
                batch.append(delivery)
            case .consumerCancelled?:
                connectionLost(.connectionClosed("consumer cancelled by the broker (queue deleted?)"))
                return
            case .ack?, .nack?, .returned?, .ignored?:
                continue
            }
        }
        core.deliver(batch)
    }

    /// Executes settlements in order. Runs of plain acks are coalesced: when they cover the oldest
    /// outstanding deliveries, one `multiple` ack replaces many frames (and many quorum-queue settle
    /// commands). Settlements for unknown or already settled tags are skipped.
    private func execute(_ settlements: [AMQPSettlement], on connection: AMQPConnection) {
        var acks = Set<UInt64>()
        for settlement in settlements where settlement.generation == supervisor.generation {
            if case .ack = settlement.kind, !settlement.multiple {
                if outstanding.contains(settlement.deliveryTag) { acks.insert(settlement.deliveryTag) }
                continue
            }
            guard flush(&acks, on: connection) else { return }
            if settlement.multiple {
                let covered = outstanding.filter { $0 <= settlement.deliveryTag }
                if covered.isEmpty { continue }
                outstanding.subtract(covered)
            } else if outstanding.remove(settlement.deliveryTag) == nil {
                continue
            }
            do {
                switch settlement.kind {
                case .ack:
                    try connection.ack(deliveryTag: settlement.deliveryTag, multiple: settlement.multiple)
                case .reject(let requeue) where !settlement.multiple:
                    try connection.reject(deliveryTag: settlement.deliveryTag, requeue: requeue)
                case .reject(let requeue), .nack(let requeue):
                    try connection.nack(deliveryTag: settlement.deliveryTag, multiple: settlement.multiple,
                                        requeue: requeue)
                }
            } catch {
                connectionLost(error)
                return
            }
        }
        _ = flush(&acks, on: connection)
    }

    /// Sends the collected acks; false if the connection failed.
    private func flush(_ acks: inout Set<UInt64>, on connection: AMQPConnection) -> Bool {
        guard !acks.isEmpty else { return true }
        defer { acks.removeAll() }
        var prefixEnd: UInt64?
        var prefixLength = 0
        for tag in outstanding.sorted() {
            guard acks.contains(tag) else { break }
            prefixEnd = tag
            prefixLength += 1
        }
        outstanding.subtract(acks)
        do {
            if let prefixEnd, prefixLength > 1 {
                try connection.ack(deliveryTag: prefixEnd, multiple: true)
                for tag in acks.filter({ $0 > prefixEnd }).sorted() { try connection.ack(deliveryTag: tag) }
            } else {
                for tag in acks.sorted() { try connection.ack(deliveryTag: tag) }
            }
            return true
        } catch {
            connectionLost(error)
            return false
        }
    }

    private func stopConsuming() {
        stopped = true
        guard let connection = supervisor.connection, let tag = consumerTag else { return }
        do {
            try connection.cancelConsuming(consumerTag: tag)
            consumerTag = nil
            core.setConsuming(false)
        } catch {
            connectionLost(error)
        }
    }

    private func connectionLost(_ error: AMQPError) {
        outstanding.removeAll()
        consumerTag = nil
        core.setDisconnected()
        supervisor.connectionLost(error)
    }
}
