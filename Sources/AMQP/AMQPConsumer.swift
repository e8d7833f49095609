import Synchronization

/// Consumes one queue over a connection owned by a dedicated thread.
///
/// Deliveries are pulled with `receive`; acks, rejects and nacks are queued and executed by the owner
/// thread, which also keeps heartbeats flowing while the application works. After a connection loss
/// the owner reconnects with capped exponential backoff, re-declares the topology and resumes
/// consuming; deliveries from the lost connection that were not settled are redelivered by the broker,
/// and settling them afterwards is silently ignored (see `AMQPDelivery.generation`).
public final class AMQPConsumer: Sendable {
    private let core: AMQPConsumerCore
    private let thread = Mutex<AMQPOwnerThread?>(nil)

    /// - Parameters:
    ///   - prefetch: maximum unacknowledged deliveries (`basic.qos`); 100–300 for throughput.
    ///   - onEvent: runs on the owner thread; keep it short.
    public init(configuration: AMQPConfiguration, topology: AMQPTopology, queue: String, prefetch: UInt16,
                onEvent: @escaping @Sendable (AMQPEvent) -> Void = { _ in }) {
        core = AMQPConsumerCore(configuration: configuration, topology: topology, queue: queue,
                                prefetch: prefetch, onEvent: onEvent)
    }

    deinit {
        core.requestShutdown()
    }

    /// Starts the owner thread, which connects (retrying in the background), declares the topology,
    /// sets the prefetch and starts consuming. Idempotent; does nothing after `close()`.
    public func start() {
        let core = core
        thread.withLock { thread in
            guard thread == nil, !core.isShutdown else { return }
            thread = AMQPOwnerThread(name: "amqp-consumer") {
                AMQPConsumerWorker(core: core).run()
            }
        }
    }

    /// Blocks up to `timeout` seconds for the first delivery, then returns up to `maxCount` of the
    /// deliveries already received. Returns an empty array on timeout or after `close()`.
    public func receive(maxCount: Int, timeout: Double) -> [AMQPDelivery] {
        core.receive(maxCount: maxCount, timeout: timeout)
    }

    /// Acknowledges `delivery` (and, if `multiple`, every earlier delivery of the same connection).
    public func ack(_ delivery: AMQPDelivery, multiple: Bool = false) {
        core.settle(AMQPSettlement(kind: .ack, deliveryTag: delivery.deliveryTag, multiple: multiple,
                                   generation: delivery.generation))
    }

    /// Acknowledges each delivery individually, with one wake-up of the owner thread.
    public func ack(_ deliveries: [AMQPDelivery]) {
        core.settle(deliveries.map {
            AMQPSettlement(kind: .ack, deliveryTag: $0.deliveryTag, multiple: false, generation: $0.generation)
        })
    }

    /// `basic.reject`. With `requeue: false` the message is dead-lettered (or dropped without a DLX);
    /// on quorum queues every reject counts towards `x-delivery-limit`.
    public func reject(_ delivery: AMQPDelivery, requeue: Bool) {
        core.settle(AMQPSettlement(kind: .reject(requeue: requeue), deliveryTag: delivery.deliveryTag,
                                   multiple: false, generation: delivery.generation))
    }

    /// Rejects each delivery individually, with one wake-up of the owner thread.
    public func reject(_ deliveries: [AMQPDelivery], requeue: Bool) {
        core.settle(deliveries.map {
            AMQPSettlement(kind: .reject(requeue: requeue), deliveryTag: $0.deliveryTag, multiple: false,
                           generation: $0.generation)
        })
    }

    /// `basic.nack` (RabbitMQ extension, supports `multiple`).
    public func nack(_ delivery: AMQPDelivery, multiple: Bool = false, requeue: Bool) {
        core.settle(AMQPSettlement(kind: .nack(requeue: requeue), deliveryTag: delivery.deliveryTag,
                                   multiple: multiple, generation: delivery.generation))
    }

    /// Cancels the consumer (`basic.cancel`) and waits until the broker confirmed it. Deliveries
    /// received before can still be acked; no new ones arrive, also not after a reconnect.
    public func stopConsuming() {
        let started = thread.withLock { $0 != nil }
        core.requestStop(timeout: started ? core.configuration.rpcTimeoutSeconds + 1 : 0)
    }

    /// Executes the settlements queued so far, closes the connection (the broker requeues what is
    /// still unacked) and stops the owner thread. Idempotent.
    public func close() {
        core.requestShutdown()
        let thread = thread.withLock { $0 }
        thread?.join(timeoutSeconds: core.configuration.rpcTimeoutSeconds + 5)
    }

    /// True while the connection is up and prepared.
    public var isConnected: Bool { core.isConnected }

    /// True while the consumer is attached to its queue: connected, and `basic.consume` in force (not yet stopped by
    /// ``stopConsuming()`` or cancelled by the broker).
    public var isConsuming: Bool { core.isConsuming }

    #if DEBUG
    /// Test hook (debug builds only): simulates a network failure of the consuming connection.
    func dropConnection() {
        core.requestConnectionDrop()
    }
    #endif
}
