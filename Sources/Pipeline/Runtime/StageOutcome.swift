/// What a handler decided for one message once its database work is done.
public enum StageOutcome: Sendable, Equatable {
    /// Publish `message` to `stage` (with confirm) before acking.
    case handOff(to: Stage, StageMessage)
    /// The payment failed permanently; the runtime records it (same transaction) and hands off to notification.
    case failed(PaymentFailure)
    /// Nothing further to publish (e.g. notification delivered).
    case completed
}
