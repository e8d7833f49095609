import JWT

/// What the simulator answers to one request: the response items, and how they are delivered.
public struct SimulatorReply: Sendable, Equatable {
    public enum Delivery: Sendable, Equatable {
        case answer
        /// Answer after this many seconds.
        case slow(Double)
        case serverError
        case connectionReset
        /// HTTP 503 before processing (fault injection).
        case unavailable
        /// Answer signed with a key the merchant does not have.
        case forged
    }

    public let items: [JSONValue]
    public let delivery: Delivery

    public init(items: [JSONValue], delivery: Delivery = .answer) {
        self.items = items
        self.delivery = delivery
    }
}

/// A request the simulator refuses, with the response item saying why.
public struct SimulatorReplyError: Error, Sendable {
    public let item: JSONValue

    init(_ item: JSONValue) {
        self.item = item
    }
}
