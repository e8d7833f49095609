import Foundation
import WorkerRuntime
import Testing

/// The benchmark guard's self-test switch (`scripts/bench --inject-slowdown e2e`): present in debug builds, where the
/// guard runs, and doing nothing unless set to a factor above 1.
@Suite struct RuntimeHooksTests {
    private static func elapsed(_ body: () -> Void) -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    #if DEBUG
    @Test func slowdownKeepsTheLaneBusyForTheExtraShare() {
        let hooks = RuntimeHooks.forWorker(environment: EnvironmentReader([RuntimeHooks.benchSlowdownVariable: "3"]))
        // Factor 3: twice the batch's own time again.
        #expect(Self.elapsed { hooks.afterBatch(0.05) } >= 0.1)
    }
    #endif

    @Test(arguments: [nil, "", "1", "0.5", "fast", "-2"])
    func withoutAFactorAboveOneNothingIsAdded(_ value: String?) {
        let environment = value.map { [RuntimeHooks.benchSlowdownVariable: $0] } ?? [:]
        let hooks = RuntimeHooks.forWorker(environment: EnvironmentReader(environment))
        // A batch of "30 s" returns at once: nothing spins.
        #expect(Self.elapsed { hooks.afterBatch(30) } < 5)
    }
}
