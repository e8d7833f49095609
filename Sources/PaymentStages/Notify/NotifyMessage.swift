import AMQP
import Pipeline

/// A decoded notify delivery: the hand-off plus what the stage needs of the delivery itself — how many retry
/// tiers it has been through (`x-paypipe-retries`, to number attempts and spot the last one) and the delivery,
/// to dead-letter it in the runtime's format when the webhook retries run out.
public struct NotifyMessage: Sendable, Equatable {
    public let message: StageMessage
    public let previousRetries: Int
    public let delivery: AMQPDelivery
    /// A finished operation's hand-off (``OperationEventMessage``): its event is sent, not the payment's.
    public let operation: Int64?

    public init(message: StageMessage, previousRetries: Int, delivery: AMQPDelivery, operation: Int64? = nil) {
        self.message = message
        self.previousRetries = previousRetries
        self.delivery = delivery
        self.operation = operation
    }
}
