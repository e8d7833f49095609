import Pipeline

/// A decoded notify delivery: the hand-off plus what the stage needs of the delivered message itself — how many retry
/// tiers it has been through (`x-paypipe-retries`, to number attempts and spot the last one) and the message, to
/// dead-letter it in the runtime's format when the webhook retries run out.
public struct NotifyMessage: Sendable, Equatable {
    public let message: StageMessage
    public let inbound: InboundMessage
    /// A finished operation's hand-off (``OperationEventMessage``): its event is sent, not the payment's.
    public let operation: Int64?
    /// A credential event's hand-off (``CredentialEventHandOff``): that event is sent, not the payment's.
    public let credentialEvent: Int64?

    public var previousRetries: Int { inbound.previousRetries }

    /// The event it asks for: an operation's or a credential's, else its payment's result.
    public var request: NotifyRequest {
        operation.map(NotifyRequest.operation) ?? credentialEvent.map(NotifyRequest.credential) ?? .payment(message.paymentId)
    }

    /// Names an event of its own (an operation's, a credential's) rather than the payment's result.
    var namesEvent: Bool { operation != nil || credentialEvent != nil }

    public init(message: StageMessage, inbound: InboundMessage, operation: Int64? = nil, credentialEvent: Int64? = nil) {
        self.message = message
        self.inbound = inbound
        self.operation = operation
        self.credentialEvent = operation == nil ? credentialEvent : nil
    }
}
