import CRabbitMQ

/// A frame read by an `AMQPConnection` owner loop, already copied into Swift values.
enum AMQPIncomingFrame {
    case delivery(AMQPDelivery)
    /// Publisher confirm: the broker took responsibility for `deliveryTag` (and all before it if `multiple`).
    case ack(deliveryTag: UInt64, multiple: Bool)
    /// Publisher confirm: the broker refused responsibility.
    case nack(deliveryTag: UInt64, multiple: Bool)
    /// A mandatory message that no queue took; its ack follows.
    case returned(AMQPReturnedMessage)
    /// The broker cancelled our consumer (e.g. its queue was deleted).
    case consumerCancelled
    /// Anything we do not act on (connection.blocked, stray content frames, ...).
    case ignored
}

/// AMQP method ids from `amqp_framing.h`. The header defines them as casted macros
/// (`((amqp_method_number_t)0x003C0050)`), which Swift does not import.
enum AMQPMethod {
    static let connectionClose: amqp_method_number_t = 0x000A_0032
    static let connectionCloseOk: amqp_method_number_t = 0x000A_0033
    static let channelClose: amqp_method_number_t = 0x0014_0028
    static let channelCloseOk: amqp_method_number_t = 0x0014_0029
    static let basicCancel: amqp_method_number_t = 0x003C_001E
    static let basicReturn: amqp_method_number_t = 0x003C_0032
    static let basicDeliver: amqp_method_number_t = 0x003C_003C
    static let basicGetOk: amqp_method_number_t = 0x003C_0047
    static let basicGetEmpty: amqp_method_number_t = 0x003C_0048
    static let basicAck: amqp_method_number_t = 0x003C_0050
    static let basicNack: amqp_method_number_t = 0x003C_0078

    /// `AMQP_REPLY_SUCCESS`.
    static let replySuccess: Int32 = 200
    /// `AMQP_DEFAULT_FRAME_SIZE`.
    static let defaultFrameSize: Int32 = 131_072
}
