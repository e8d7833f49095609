/// The topic exchange notify publishes payment results to (declared with the rest of ``PipelineTopology``) and its
/// routing keys: what the notify stage needs of the topology, without the stages' layout; and, below, when notify
/// publishes on it (``ResultsTiming``, configured by `PAYPIPE_RESULTS_TIMING`).
public enum ResultsExchange {
    /// Topic exchange of payment results, routing key = event type (`payment.authorized`, …).
    public static let name = "paypipe.results"

    /// The second routing key of a merchant's event on the exchange (sent as the `CC` header, so bindings by event type
    /// keep receiving it once): `<type>.<merchantId>`, e.g. `payment.authorized.merchant-a`. A reader binds
    /// `payment.*.<merchantId>`; topic permissions (scripts/broker-permissions) let it bind nothing else.
    public static func merchantKey(type: String, merchantId: String) -> String {
        "\(type).\(merchantId)"
    }
}

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
