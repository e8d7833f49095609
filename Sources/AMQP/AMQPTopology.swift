/// Exchanges, queues and bindings a client needs. `AMQPPublisher` and `AMQPConsumer` declare it on
/// every (re)connect, so a broker that lost non-durable state, or a queue deleted by an operator, is
/// recreated before traffic resumes. Declaration order: exchanges, queues, bindings.
public struct AMQPTopology: Sendable, Equatable {
    public var exchanges: [AMQPExchange]
    public var queues: [AMQPQueue]
    public var bindings: [AMQPBinding]

    public init(exchanges: [AMQPExchange] = [], queues: [AMQPQueue] = [], bindings: [AMQPBinding] = []) {
        self.exchanges = exchanges
        self.queues = queues
        self.bindings = bindings
    }

    public var isEmpty: Bool { exchanges.isEmpty && queues.isEmpty && bindings.isEmpty }
}
