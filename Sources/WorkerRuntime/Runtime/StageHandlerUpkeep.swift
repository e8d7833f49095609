import Foundation
import Postgres

/// Optional parts of a stage handler that the runtime calls besides processing batches. Both default to nothing.
public protocol StageHandlerUpkeep {
    /// Called once by ``StageRuntime`` with the worker's registry, before any batch: a handler (or its breakers,
    /// gates, key counters) registers and reports its own series there, next to the runtime's.
    func attach(metrics registry: MetricsRegistry)

    /// Periodic upkeep on the reconciler thread, every `PAYPIPE_RECONCILE_INTERVAL`, on that thread's own database
    /// connection and outside any transaction (e.g. the decrypt stage's certificate-expiry check). A thrown error is
    /// logged (`upkeep_failed`) and the next round tries again.
    func upkeep(database: PostgresConnection, logger: Logger) throws
}

extension StageHandlerUpkeep {
    public func attach(metrics registry: MetricsRegistry) {}
    public func upkeep(database: PostgresConnection, logger: Logger) throws {}
}
