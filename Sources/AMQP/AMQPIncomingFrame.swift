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
