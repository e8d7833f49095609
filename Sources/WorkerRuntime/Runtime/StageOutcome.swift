/// What a handler decided for one message once its database work is done.
public enum StageOutcome: Sendable, Equatable {
    /// Publish the hand-off to its stage (with confirm) before acking.
    case handOff(HandOffMessage)
    /// Nothing further to publish (e.g. notification delivered).
    case completed
    /// Nothing to publish and nobody to report to now (e.g. an operation that waits for a person): the runtime acks
    /// it and logs `message_settled` with `note` (a short snake_case word, not a failure code) and `reason`, so that
    /// the message's end is never silent.
    case settled(note: String, reason: String)
    /// Publish these messages (with confirms, like hand-offs) before acking: e.g. the result event on
    /// `paypipe.results`. Used by stages whose effect is itself a message.
    case publish([OutboundMessage])
}

/// A message for another stage's queue, already rendered by the stage side: the runtime publishes it persistent and
/// mandatory through the stages exchange, under the target's name, as JSON (``DeliveryRouter/handOff(_:)``).
public struct HandOffMessage: Sendable, Equatable {
    public let target: StageName
    /// Its `message_id` (consumers dedupe on it).
    public let id: String
    public let body: [UInt8]
    /// The trace it continues when it is not the handled delivery's: a payment re-driven from its row (the reconciler,
    /// an operator's command, operations handing a deferred payment back) carries the context its row kept, and is sent
    /// with it (``DeliveryRouter/handOff(_:)``), so the next stage's span joins the payment's own trace. Nil: the
    /// delivery's (``DeliveryTrace/stamped(_:)``), or a new trace for what is published outside any delivery.
    public let trace: TraceContext?

    public init(to target: StageName, id: String, body: [UInt8], trace: TraceContext? = nil) {
        (self.target, self.id, self.body, self.trace) = (target, id, body, trace)
    }
}
