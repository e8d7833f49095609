import CRabbitMQ
import Foundation

extension AMQPProperties {
    /// Copies the properties of a received message.
    init(_ properties: amqp_basic_properties_t) {
        let flags = properties._flags
        func text(_ flag: amqp_flags_t, _ bytes: amqp_bytes_t) -> String? {
            flags & flag != 0 ? AMQPTableCodec.string(bytes) : nil
        }
        self.init(
            contentType: text(AMQPPropertyFlag.contentType, properties.content_type),
            contentEncoding: text(AMQPPropertyFlag.contentEncoding, properties.content_encoding),
            messageId: text(AMQPPropertyFlag.messageId, properties.message_id),
            correlationId: text(AMQPPropertyFlag.correlationId, properties.correlation_id),
            replyTo: text(AMQPPropertyFlag.replyTo, properties.reply_to),
            type: text(AMQPPropertyFlag.type, properties.type),
            appId: text(AMQPPropertyFlag.appId, properties.app_id),
            persistent: flags & AMQPPropertyFlag.deliveryMode != 0 && properties.delivery_mode == 2,
            priority: flags & AMQPPropertyFlag.priority != 0 ? properties.priority : nil,
            headers: flags & AMQPPropertyFlag.headers != 0 ? AMQPTableCodec.decode(properties.headers) : [:],
            timestamp: flags & AMQPPropertyFlag.timestamp != 0
                ? Date(timeIntervalSince1970: Double(properties.timestamp)) : nil,
            expiration: text(AMQPPropertyFlag.expiration, properties.expiration)
        )
    }

    /// The `user_id` of a received message (``AMQPDelivery/userId``), which the broker checked against the publisher's
    /// connection.
    static func userId(_ properties: amqp_basic_properties_t) -> String? {
        properties._flags & AMQPPropertyFlag.userId != 0 ? AMQPTableCodec.string(properties.user_id) : nil
    }

    /// Encodes into `arena`-owned C memory, valid until the arena is reset.
    func encode(into arena: AMQPCArena) -> amqp_basic_properties_t {
        var result = amqp_basic_properties_t()
        var flags: amqp_flags_t = AMQPPropertyFlag.deliveryMode
        result.delivery_mode = persistent ? 2 : 1
        func set(_ value: String?, _ flag: amqp_flags_t, _ field: inout amqp_bytes_t) {
            guard let value else { return }
            field = arena.bytes(value)
            flags |= flag
        }
        set(contentType, AMQPPropertyFlag.contentType, &result.content_type)
        set(contentEncoding, AMQPPropertyFlag.contentEncoding, &result.content_encoding)
        set(messageId, AMQPPropertyFlag.messageId, &result.message_id)
        set(correlationId, AMQPPropertyFlag.correlationId, &result.correlation_id)
        set(replyTo, AMQPPropertyFlag.replyTo, &result.reply_to)
        set(type, AMQPPropertyFlag.type, &result.type)
        set(appId, AMQPPropertyFlag.appId, &result.app_id)
        set(expiration, AMQPPropertyFlag.expiration, &result.expiration)
        set(userId, AMQPPropertyFlag.userId, &result.user_id)
        if let priority {
            result.priority = priority
            flags |= AMQPPropertyFlag.priority
        }
        if !headers.isEmpty {
            result.headers = arena.table(headers)
            flags |= AMQPPropertyFlag.headers
        }
        if let timestamp {
            result.timestamp = UInt64(max(0, timestamp.timeIntervalSince1970.rounded(.down)))
            flags |= AMQPPropertyFlag.timestamp
        }
        result._flags = flags
        return result
    }
}

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
    static let userId: amqp_flags_t = 1 << 4
    static let appId: amqp_flags_t = 1 << 3
}
