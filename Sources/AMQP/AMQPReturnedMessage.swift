/// A `basic.return`: the broker could not route a mandatory message.
struct AMQPReturnedMessage {
    var replyCode: Int
    var replyText: String
    var exchange: String
    var routingKey: String
    var body: [UInt8]
}
