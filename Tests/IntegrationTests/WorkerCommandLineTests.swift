import Foundation
import PaymentStages
import Pipeline
import Testing

extension Integration {
    /// A worker's command line, as the built executables answer it (`swift build` first). None of these runs needs a
    /// service: `--help` and a refused argument must be answered before anything is read or connected.
    @Suite struct WorkerCommandLineTests {
        static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()

        static func executable(_ stage: Stage) -> String {
            packageRoot.appendingPathComponent(".build/debug/paypipe-\(stage.rawValue)").path
        }

        /// A broker and database nobody listens on, with an otherwise valid sandbox configuration: were the worker to
        /// start, it would try them.
        static let unreachable = [
            "PAYPIPE_ENV": "sandbox", "PAYPIPE_AMQP_URL": "amqp://u:p@127.0.0.1:1/%2f",
            "PAYPIPE_DATABASE_URL": "postgresql://u@127.0.0.1:1/none", "PAYPIPE_DATA_KEY": Data(repeating: 1, count: 32).base64EncodedString(),
            "PAYPIPE_METRICS_PORT": "0",
        ]

        @Test(arguments: Stage.allCases)
        func helpPrintsTheWorkersVariablesAndExitsZero(stage: Stage) throws {
            let output = try ChildProcess.runCapturingOutput(Self.executable(stage), ["--help"], environment: Self.unreachable)
            #expect(output.status == 0, "\(output.text)")
            #expect(output.text.hasPrefix("Usage: paypipe-\(stage.rawValue) "))
            #expect(output.text.contains("PAYPIPE_AMQP_URL") && output.text.contains("PAYPIPE_MERCHANT_CACHE_TTL"))
            #expect(output.text.contains("PAYPIPE_GATEWAY_BREAKER_FAILURES") == (stage == .submit || stage == .operations))
            // Nothing was started: no log line (every line a worker logs is JSON).
            #expect(!output.text.contains("{\""), "\(output.text)")
        }

        /// Any other argument exits 64 naming it, before the configuration is read: an invalid variable would
        /// otherwise exit 78, a valid one with an unreachable broker would try to connect.
        @Test(arguments: Stage.allCases)
        func anUnknownArgumentExits64WithoutStarting(stage: Stage) throws {
            let refused = try ChildProcess.runCapturingOutput(Self.executable(stage), ["--bogus"], environment: Self.unreachable)
            #expect(refused.status == 64, "\(refused.text)")
            #expect(refused.text.contains("'--bogus'") && !refused.text.contains("{\""), "\(refused.text)")

            var invalid = Self.unreachable
            invalid["PAYPIPE_PREFETCH"] = "0"
            let beforeConfiguration = try ChildProcess.runCapturingOutput(Self.executable(stage), ["--help", "extra"], environment: invalid)
            #expect(beforeConfiguration.status == 64, "\(beforeConfiguration.text)")
            #expect(beforeConfiguration.text.contains("'extra'"))
            // The same configuration without arguments is refused as configuration: the 64 above came first.
            let configured = try ChildProcess.runCapturingOutput(Self.executable(stage), [], environment: invalid)
            #expect(configured.status == 78 && configured.text.contains("PAYPIPE_PREFETCH"), "\(configured.text)")
        }
    }
}
