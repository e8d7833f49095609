/// An ack/reject/nack queued by an application thread for the consumer's owner thread.
struct AMQPSettlement: Sendable {
    enum Kind: Sendable {
        case ack
        case reject(requeue: Bool)
        case nack(requeue: Bool)
    }

    var kind: Kind
    var deliveryTag: UInt64
    var multiple: Bool
    /// Connection generation of the delivery; settlements for another generation are dropped.
    var generation: UInt64
}
