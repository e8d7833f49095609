/// One message of a publish window on its way through the owner loop: queued, then unconfirmed.
struct AMQPPendingPublish {
    let window: AMQPPublishWindow
    let index: Int
    /// Set when a `basic.return` for this message arrived; reported when its ack arrives.
    var returned: AMQPError?

    var message: AMQPOutboundMessage { window.request.messages[index] }

    /// Whether this message is the one a `basic.return` refers to. Returns carry no sequence number,
    /// but they precede the ack on the same channel, so the earliest unconfirmed mandatory message
    /// with the same exchange, routing key and body is the returned one (or an identical twin).
    func matches(_ returned: AMQPReturnedMessage) -> Bool {
        let message = message
        return self.returned == nil && message.mandatory && message.exchange == returned.exchange
            && message.routingKey == returned.routingKey && message.body == returned.body
    }
}
