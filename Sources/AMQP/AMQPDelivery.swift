/// A message received from a queue (by `basic.deliver` or `basic.get`).
public struct AMQPDelivery: Sendable, Equatable {
    public var body: [UInt8]
    public var properties: AMQPProperties
    public var exchange: String
    public var routingKey: String
    /// False guarantees the message was not delivered before; true only means it may have been.
    public var redelivered: Bool
    /// Channel-scoped tag used to ack this delivery.
    public var deliveryTag: UInt64
    /// Which connection of the owning consumer received it. Delivery tags are only valid on their
    /// connection, so acks for an older generation are ignored (the broker has requeued those messages).
    public var generation: UInt64
    /// Quorum queues' `x-delivery-count` header (failed delivery attempts so far), 0 if absent. The broker writes it
    /// only when it redelivers, so on a delivery not marked `redelivered` the header is the publisher's and counts 0.
    public var deliveryCount: Int
    /// The message's AMQP `user_id` property: the broker user that published it, which RabbitMQ verified against the
    /// publishing connection's user (a publish claiming another user is refused). Nil when the publisher set none.
    /// Kept out of ``properties`` (see ``AMQPProperties/userId``).
    public var userId: String?

    public init(body: [UInt8], properties: AMQPProperties, exchange: String, routingKey: String,
                redelivered: Bool, deliveryTag: UInt64, generation: UInt64, userId: String? = nil) {
        self.userId = userId
        self.body = body
        self.properties = properties
        self.exchange = exchange
        self.routingKey = routingKey
        self.redelivered = redelivered
        self.deliveryTag = deliveryTag
        self.generation = generation
        self.deliveryCount = redelivered ? max(0, Int(clamping: properties.headers[Self.deliveryCountHeader]?.intValue ?? 0)) : 0
    }

    /// The quorum queue's redelivery counter.
    public static let deliveryCountHeader = "x-delivery-count"
}
