import Foundation
import Postgres
import Synchronization

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

/// A registry handed over after construction (``StageHandlerUpkeep/attach(metrics:)``): components built before the
/// runtime exists (breakers, gates) report through it, and report nothing until attached (unit tests).
public final class AttachedMetrics: Sendable {
    private let registry = Mutex<MetricsRegistry?>(nil)

    public init() {}

    /// Attaches `registry` and runs `declare` on it (register the families, set their initial values).
    public func attach(_ registry: MetricsRegistry, declare: (MetricsRegistry) -> Void = { _ in }) {
        self.registry.withLock { $0 = registry }
        declare(registry)
    }

    /// Runs `body` with the registry when one is attached.
    public func report(_ body: (MetricsRegistry) -> Void) {
        if let registry = registry.withLock({ $0 }) { body(registry) }
    }
}
