import Testing
@testable import WorkerRuntime

@Suite struct ProcessHardeningTests {
    /// What WorkerLauncher does first: afterwards this process is not dumpable and may write no core file.
    @Test func coreDumpsAreDisabled() {
        #expect(ProcessHardening.disableCoreDumps().isEmpty)
        let state = ProcessHardening.state
        #expect(!state.dumpable)
        #expect(state.coreLimit == 0)
    }
}
