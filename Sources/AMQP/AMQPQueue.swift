/// A queue to declare. Declaring is idempotent as long as the attributes and arguments match.
public struct AMQPQueue: Sendable, Equatable {
    public var name: String
    public var durable: Bool
    /// `x-queue-type`, `x-delivery-limit`, `x-dead-letter-exchange`, `x-message-ttl`, ...
    public var arguments: [String: AMQPFieldValue]

    public init(name: String, durable: Bool = true, arguments: [String: AMQPFieldValue] = [:]) {
        self.name = name
        self.durable = durable
        self.arguments = arguments
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
