import Synchronization

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
