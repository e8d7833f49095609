/// Everything that can go wrong talking to RabbitMQ.
///
/// Descriptions never contain credentials or message bodies: they are safe to log. Connection-level
/// failures (`connectionFailed`, `connectionClosed`) are retried by `AMQPPublisher` / `AMQPConsumer`
/// themselves; the others are reported to the caller because retrying would not change the outcome.
public enum AMQPError: Error, CustomStringConvertible, Equatable {
    /// The URL could not be parsed; the payload says why (it never echoes the URL itself).
    case invalidURL(String)
    /// TCP/TLS connect, AMQP handshake or login failed.
    case connectionFailed(String)
    /// The broker closed the channel (a channel exception, e.g. 404 NOT_FOUND or 406 PRECONDITION_FAILED).
    /// The connection is still usable; `AMQPConnection` reopens the channel on its next operation.
    case channelClosed(code: Int, text: String)
    /// The connection is gone (socket error, missed heartbeats, broker `connection.close`, ...).
    case connectionClosed(String)
    /// The broker refused responsibility for a published message (`basic.nack`); it may be re-published.
    case nacked
    /// A mandatory message could not be routed to any queue (`basic.return`).
    case unroutable(replyCode: Int, text: String)
    /// The operation did not finish in time. For publishes the messages may still have reached the broker.
    case timeout
    /// The object was closed by the application.
    case closed
    /// An argument rabbitmq-c or the broker cannot encode (e.g. a header name over 255 bytes).
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .invalidURL(let reason): "invalid AMQP URL: \(reason)"
        case .connectionFailed(let reason): "AMQP connection failed: \(reason)"
        case .channelClosed(let code, let text): "AMQP channel closed by broker: \(code) \(text)"
        case .connectionClosed(let reason): "AMQP connection closed: \(reason)"
        case .nacked: "message nacked by broker"
        case .unroutable(let code, let text): "message unroutable: \(code) \(text)"
        case .timeout: "AMQP operation timed out"
        case .closed: "AMQP client closed"
        case .invalidArgument(let reason): "invalid AMQP argument: \(reason)"
        }
    }
}
