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
