/// An exchange to declare. Declaring is idempotent as long as the attributes match; a mismatch is a
/// 406 PRECONDITION_FAILED channel error.
public struct AMQPExchange: Sendable, Equatable {
    /// The exchange type.
    public enum Kind: String, Sendable, Equatable {
        case direct, topic, fanout, headers
    }

    public var name: String
    public var kind: Kind
    public var durable: Bool
    public var autoDelete: Bool
    /// E.g. `alternate-exchange`.
    public var arguments: [String: AMQPFieldValue]

    public init(name: String, kind: Kind = .direct, durable: Bool = true, autoDelete: Bool = false,
                arguments: [String: AMQPFieldValue] = [:]) {
        self.name = name
        self.kind = kind
        self.durable = durable
        self.autoDelete = autoDelete
        self.arguments = arguments
    }
}
