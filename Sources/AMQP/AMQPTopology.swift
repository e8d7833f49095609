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

/// An exchange to declare. Declaring is idempotent as long as the attributes match; a mismatch is a
/// 406 PRECONDITION_FAILED channel error.
public struct AMQPExchange: Sendable, Equatable {
    /// The exchange type.
    public enum Kind: String, Sendable, Equatable {
        case direct, topic, fanout, headers
    }

    public var name: String
    public var kind: Kind
    public var durable: Bool
    public var autoDelete: Bool
    /// E.g. `alternate-exchange`.
    public var arguments: [String: AMQPFieldValue]

    public init(name: String, kind: Kind = .direct, durable: Bool = true, autoDelete: Bool = false,
                arguments: [String: AMQPFieldValue] = [:]) {
        self.name = name
        self.kind = kind
        self.durable = durable
        self.autoDelete = autoDelete
        self.arguments = arguments
    }
}

/// A queue to declare. Declaring is idempotent as long as the attributes and arguments match.
public struct AMQPQueue: Sendable, Equatable {
    public var name: String
    public var durable: Bool
    /// `x-queue-type`, `x-delivery-limit`, `x-dead-letter-exchange`, `x-message-ttl`, ...
    public var arguments: [String: AMQPFieldValue]
    /// Arguments that shape a queue when it is created and are not held against an existing one, such as
    /// `x-quorum-initial-group-size`. RabbitMQ (3.10) does compare them on redeclaration, in both directions (a queue
    /// declared without one refuses a redeclaration with it, and the other way round: 406 PRECONDITION_FAILED), so
    /// `AMQPConnection.declareQueue` sends them first and, if the broker names one of them as inequivalent, declares
    /// again without them and finally passively: the queue exists, and its replicas are the operator's
    /// (`rabbitmq-queues grow`), not the declaration's.
    public var creationArguments: [String: AMQPFieldValue]

    /// Arguments RabbitMQ holds against a redeclaration although they only matter at creation: a queue created with
    /// one of them is accepted when declared without it (e.g. after `PAYPIPE_AMQP_URL` went back to one address).
    public static let creationOnlyArgumentKeys: Set<String> = ["x-quorum-initial-group-size"]

    public init(name: String, durable: Bool = true, arguments: [String: AMQPFieldValue] = [:],
                creationArguments: [String: AMQPFieldValue] = [:]) {
        self.name = name
        self.durable = durable
        self.arguments = arguments
        self.creationArguments = creationArguments
    }

    /// A durable quorum queue. Quorum queues count redeliveries (`x-delivery-count`) and dead-letter a
    /// message after `deliveryLimit` failed deliveries; give them a dead-letter exchange so poison
    /// messages are parked instead of dropped.
    public static func quorum(
        name: String,
        deliveryLimit: Int? = nil,
        deadLetterExchange: String? = nil,
        deadLetterRoutingKey: String? = nil,
        messageTTLMilliseconds: Int? = nil,
        extraArguments: [String: AMQPFieldValue] = [:]
    ) -> AMQPQueue {
        var arguments = extraArguments
        arguments["x-queue-type"] = "quorum"
        if let deliveryLimit { arguments["x-delivery-limit"] = .int(Int64(deliveryLimit)) }
        if let deadLetterExchange { arguments["x-dead-letter-exchange"] = .string(deadLetterExchange) }
        if let deadLetterRoutingKey { arguments["x-dead-letter-routing-key"] = .string(deadLetterRoutingKey) }
        if let messageTTLMilliseconds { arguments["x-message-ttl"] = .int(Int64(messageTTLMilliseconds)) }
        return AMQPQueue(name: name, durable: true, arguments: arguments)
    }
}

/// A queue-to-exchange binding to declare.
public struct AMQPBinding: Sendable, Equatable {
    public var queue: String
    public var exchange: String
    public var routingKey: String
    /// Match arguments for headers exchanges.
    public var arguments: [String: AMQPFieldValue]

    public init(queue: String, exchange: String, routingKey: String, arguments: [String: AMQPFieldValue] = [:]) {
        self.queue = queue
        self.exchange = exchange
        self.routingKey = routingKey
        self.arguments = arguments
    }
}
