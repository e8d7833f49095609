/// The payments' series of a stage's worker, next to the runtime's (``StageMetrics``) and labelled the same way: what
/// the payments' reconciler reports. Made (and so registered) with the worker's reconciler component, before the
/// worker serves `/metrics`; the gauges are present from the start, so dashboards and alert rules see them before the
/// first round.
public struct PaymentMetrics: Sendable {
    public let runtime: StageMetrics
    private var registry: MetricsRegistry { runtime.registry }
    private var labels: [String: String] { runtime.labels }

    public enum Name {
        public static let paymentsFailed = "paypipe_payments_failed_total"
        public static let redriven = "paypipe_payments_redriven_total"
        public static let oldestAge = "paypipe_stage_oldest_age_seconds"
        public static let reconcilerBacklog = "paypipe_reconciler_backlog"
        public static let needsReview = "paypipe_payments_needs_review"
    }

    public init(_ runtime: StageMetrics) {
        self.runtime = runtime
        let registry = runtime.registry, labels = runtime.labels
        registry.register(Name.paymentsFailed, kind: .counter, help: "Payments ended failed in this stage, by error code (from the audit trail, by the reconciler; every instance of a stage reports them).")
        registry.register(Name.redriven, kind: .counter, help: "Stuck payments re-driven by the reconciler.")
        registry.register(Name.oldestAge, kind: .gauge, help: "Seconds since the payment idle longest in this stage last moved (0: none), set by the reconciler.")
        registry.register(Name.reconcilerBacklog, kind: .gauge, help: "Payments idle in this stage past PAYPIPE_STUCK_AFTER, set by the reconciler.")
        registry.register(Name.needsReview, kind: .gauge, help: "Payments in needs_review (all stages), set by the reconciler.")
        registry.set(Name.oldestAge, labels: labels, to: 0)
        registry.set(Name.reconcilerBacklog, labels: labels, to: 0)
        registry.set(Name.needsReview, labels: labels, to: 0)
    }

    public func paymentFailed(code: String, count: Int = 1) {
        registry.increment(Name.paymentsFailed, labels: labels.merging(["code": code]) { $1 }, by: Double(count))
    }
    public func redriven(_ count: Int) { registry.increment(Name.redriven, labels: labels, by: Double(count)) }
    /// The reconciler's gauges.
    public func stageBacklog(oldestAgeSeconds: Double, stuck: Int, needsReview: Int) {
        registry.set(Name.oldestAge, labels: labels, to: oldestAgeSeconds)
        registry.set(Name.reconcilerBacklog, labels: labels, to: Double(stuck))
        registry.set(Name.needsReview, labels: labels, to: Double(needsReview))
    }
}
