import Foundation

/// The AMQP basic properties of a message that PayPipe uses.
public struct AMQPProperties: Sendable, Equatable {
    public var contentType: String?
    public var contentEncoding: String?
    public var messageId: String?
    public var correlationId: String?
    public var replyTo: String?
    public var type: String?
    public var appId: String?
    /// `delivery_mode` 2. Defaults to true: only persistent messages survive a broker restart in a
    /// durable queue and keep surviving once dead-lettered out of a quorum queue.
    public var persistent: Bool
    public var priority: UInt8?
    public var headers: [String: AMQPFieldValue]
    /// Sent as whole seconds since 1970 (AMQP's resolution); sub-second parts are dropped.
    public var timestamp: Date?
    /// Per-message TTL in milliseconds, as a string (AMQP's type for it).
    public var expiration: String?
    /// `user_id`: the broker user the publisher claims to be. RabbitMQ refuses a publish whose `user_id` is not the
    /// connection's user, so on a received message it is the publisher's authenticated identity. Only sent: a received
    /// message's value is ``AMQPDelivery/userId``, never copied into these properties, so a message another user
    /// re-publishes (a retry, a dead letter) is not refused by the broker for claiming the first publisher.
    public var userId: String?

    public init(
        contentType: String? = nil,
        contentEncoding: String? = nil,
        messageId: String? = nil,
        correlationId: String? = nil,
        replyTo: String? = nil,
        type: String? = nil,
        appId: String? = nil,
        persistent: Bool = true,
        priority: UInt8? = nil,
        headers: [String: AMQPFieldValue] = [:],
        timestamp: Date? = nil,
        expiration: String? = nil,
        userId: String? = nil
    ) {
        self.contentType = contentType
        self.contentEncoding = contentEncoding
        self.messageId = messageId
        self.correlationId = correlationId
        self.replyTo = replyTo
        self.type = type
        self.appId = appId
        self.persistent = persistent
        self.priority = priority
        self.headers = headers
        self.timestamp = timestamp
        self.expiration = expiration
        self.userId = userId
    }
}
