/// A message to publish.
public struct AMQPOutboundMessage: Sendable, Equatable {
    public var exchange: String
    public var routingKey: String
    public var body: [UInt8]
    public var properties: AMQPProperties
    /// Ask the broker to return the message (→ `AMQPError.unroutable`) when no queue takes it, instead
    /// of silently dropping it. On by default: a payment job routed nowhere is a lost payment job.
    public var mandatory: Bool

    public init(exchange: String, routingKey: String, body: [UInt8],
                properties: AMQPProperties = AMQPProperties(), mandatory: Bool = true) {
        self.exchange = exchange
        self.routingKey = routingKey
        self.body = body
        self.properties = properties
        self.mandatory = mandatory
    }
}
