/// What a handler decided for one message once its database work is done.
public enum StageOutcome: Sendable, Equatable {
    /// Publish `message` to `stage` (with confirm) before acking.
    case handOff(to: Stage, StageMessage)
    /// Nothing further to publish (e.g. notification delivered).
    case completed
    /// Publish these messages (with confirms, like hand-offs) before acking: e.g. the result event on
    /// `paypipe.results`. Used by stages whose effect is itself a message.
    case publish([OutboundMessage])
}
