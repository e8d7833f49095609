import Crypto
import Pipeline
import Testing

@Suite struct DataKeySealsTests {
    /// Every seal is counted under the key that sealed it, and exported once attached (0 before the first seal).
    @Test func sealsAreCountedPerDataKey() throws {
        let old = try DataKey(bytes: SecureRandom.bytes(count: 32))
        let current = try DataKey(bytes: SecureRandom.bytes(count: 32))
        let vault = DataVault(keyring: DataKeyring(current: current, previous: [old]))
        let registry = MetricsRegistry()
        vault.attach(metrics: registry)
        #expect(registry.render().contains(#"paypipe_data_key_seals_total{key_id="\#(current.id)"} 0"#), "\(registry.render())")
        let copy = vault
        for _ in 0..<3 { _ = try copy.seal([1, 2, 3], aad: []) }
        #expect(registry.value(DataKeySeals.metric, labels: ["key_id": current.id]) == 3)
        #expect(registry.value(DataKeySeals.metric, labels: ["key_id": old.id]) == 0)
    }
}
