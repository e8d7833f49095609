import Synchronization

/// The simulator's fault draws: seeded (`PAYPIPE_SIM_SEED`, SplitMix64) so that an adversarial chaos run can be
/// replayed with the same sequence of faults, or the system generator when no seed is given. Replays are as close as
/// the order in which requests arrive allows.
public final class SimulatorDice: Sendable {
    private let state: Mutex<UInt64?>

    public init(seed: UInt64? = nil) {
        state = Mutex(seed)
    }

    /// A draw in 0..<1.
    public func next() -> Double {
        let bits: UInt64 = state.withLock { state in
            guard var value = state else { return UInt64.random(in: 0...UInt64.max) }
            value &+= 0x9E37_79B9_7F4A_7C15
            state = value
            var z = value
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return Double(bits >> 11) / Double(UInt64(1) << 53)
    }
}
