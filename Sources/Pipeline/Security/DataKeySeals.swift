/// AES-GCM seals per data key, exported as `paypipe_data_key_seals_total{key_id}`: each seal draws a random 96-bit
/// nonce, and NIST SP 800-38D bounds the invocations of one key with random nonces (docs/security.md gives the
/// rotation volume). Shared by every copy of a ``DataVault``; counted from start-up (Prometheus sums the workers).
public final class DataKeySeals: Sendable {
    public static let metric = "paypipe_data_key_seals_total"

    private let metrics = AttachedMetrics()

    public init() {}

    public func attach(metrics registry: MetricsRegistry, currentKeyId: String) {
        metrics.attach(registry) { registry in
            registry.register(Self.metric, kind: .counter, help: "AES-GCM seals (random 96-bit nonces) under each data key since start-up.")
            // Present from start-up at 0, so rate() and increase() see the first seal.
            registry.increment(Self.metric, labels: ["key_id": currentKeyId], by: 0)
        }
    }

    func record(keyId: String) {
        metrics.report { $0.increment(Self.metric, labels: ["key_id": keyId]) }
    }
}
