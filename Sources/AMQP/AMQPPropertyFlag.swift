import CRabbitMQ

/// `AMQP_BASIC_*_FLAG` bits of `amqp_basic_properties_t._flags` (shift macros in `amqp_framing.h`).
enum AMQPPropertyFlag {
    static let contentType: amqp_flags_t = 1 << 15
    static let contentEncoding: amqp_flags_t = 1 << 14
    static let headers: amqp_flags_t = 1 << 13
    static let deliveryMode: amqp_flags_t = 1 << 12
    static let priority: amqp_flags_t = 1 << 11
    static let correlationId: amqp_flags_t = 1 << 10
    static let replyTo: amqp_flags_t = 1 << 9
    static let expiration: amqp_flags_t = 1 << 8
    static let messageId: amqp_flags_t = 1 << 7
    static let timestamp: amqp_flags_t = 1 << 6
    static let type: amqp_flags_t = 1 << 5
    static let appId: amqp_flags_t = 1 << 3
}
