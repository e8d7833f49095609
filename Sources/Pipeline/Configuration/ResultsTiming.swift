/// When notify publishes an event on `paypipe.results` (`PAYPIPE_RESULTS_TIMING`).
public enum ResultsTiming: String, Sendable, CaseIterable {
    /// With the first decision on the event, whatever the webhook's fate: a backend waiting on the results exchange
    /// never waits on a failing merchant endpoint (the default).
    case outcome
    /// Once the webhook is settled: delivered, gone (410), refused, or out of attempts.
    case webhook

    /// `PAYPIPE_RESULTS_TIMING`'s default, and a `NotifyStage`'s when none is given.
    public static let standard = ResultsTiming.outcome
}
