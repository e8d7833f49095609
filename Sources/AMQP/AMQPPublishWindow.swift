/// Owner-thread bookkeeping of one publish request: completes it once every message is settled.
final class AMQPPublishWindow {
    let request: AMQPPublishRequest
    private var unsettled: Int
    /// The failure of the lowest-indexed failed message, reported to the caller.
    private var firstFailure: (index: Int, error: AMQPError)?

    init(request: AMQPPublishRequest) {
        self.request = request
        unsettled = request.messages.count
    }

    /// Records the final outcome of message `index` (called exactly once per message).
    func settle(index: Int, failure: AMQPError?) {
        if let failure, index < firstFailure?.index ?? .max {
            firstFailure = (index, failure)
        }
        unsettled -= 1
        guard unsettled == 0 else { return }
        if let firstFailure {
            request.complete(.failure(firstFailure.error))
        } else {
            request.complete(.success(()))
        }
    }
}

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

/// A `basic.return`: the broker could not route a mandatory message.
struct AMQPReturnedMessage {
    var replyCode: Int
    var replyText: String
    var exchange: String
    var routingKey: String
    var body: [UInt8]
}
