import Pipeline

/// The merchant-token puller's series on the operations worker (docs/operations.md): what each pull came to and what
/// each applied event did. Registered at 0 by every operations worker, configured for the pull or not, so an alert
/// on their increase has a series to watch; counted from start-up (Prometheus sums the workers).
public final class MerchantTokenMetrics: Sendable {
    public static let pullsMetric = "paypipe_merchant_token_pulls_total"
    public static let appliedMetric = "paypipe_merchant_token_events_applied_total"
    static let outcomes = ["pulled", "retry", "failed"]
    static let changes = ["unlinked", "already_unlinked", "updated", "no_credential", "ignored"]

    private let metrics = AttachedMetrics()

    public init() {}

    public func attach(metrics registry: MetricsRegistry) {
        metrics.attach(registry) { registry in
            registry.register(Self.pullsMetric, kind: .counter,
                              help: "Apple merchant-token event pulls by outcome (pulled; retry: not answered yet; failed: given up).")
            for outcome in Self.outcomes { registry.increment(Self.pullsMetric, labels: ["outcome": outcome], by: 0) }
            registry.register(Self.appliedMetric, kind: .counter, help: "Pulled merchant-token events applied to credentials, by what they changed.")
            for change in Self.changes { registry.increment(Self.appliedMetric, labels: ["change": change], by: 0) }
        }
    }

    func pulled(_ outcome: MerchantTokenEventPull.Outcome) {
        let label = switch outcome {
        case .pulled: "pulled"
        case .retry: "retry"
        case .failed: "failed"
        }
        metrics.report { $0.increment(Self.pullsMetric, labels: ["outcome": label]) }
    }

    func applied(_ change: MerchantTokenEventApplier.Change) {
        let label = switch change {
        case .unlinked: "unlinked"
        case .alreadyUnlinked: "already_unlinked"
        case .updated: "updated"
        case .noCredential: "no_credential"
        case .ignored: "ignored"
        }
        metrics.report { $0.increment(Self.appliedMetric, labels: ["change": label]) }
    }
}
