import AMQP
import Foundation
import PaymentStages
import Pipeline
import Testing

extension Integration {
/// The real `paypipe-decrypt` executable: configuration from the environment, health endpoint, SIGTERM.
@Suite struct WorkerProcessTests {
    static var binaryDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug").path
    }

    @Test func sigtermDrainsAndExitsZero() throws {
        let harness = try DecryptHarness()
        let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("decrypt-\(UUID()).log").path
        let worker = try ChildProcess.spawn(Self.binaryDirectory + "/paypipe-decrypt", [], environment: [
            "PAYPIPE_ENV": "sandbox", "PAYPIPE_AMQP_URL": TestServices.amqpURL, "PAYPIPE_DATABASE_URL": TestServices.databaseURL,
            "PAYPIPE_DATA_KEY_FILE": harness.sandbox.dataKeyPath, "PAYPIPE_APPLEPAY_TRUST_ROOT": harness.sandbox.trustRootPath,
            "PAYPIPE_METRICS_PORT": "9181", "PAYPIPE_METRICS_HOST": "127.0.0.1", "PAYPIPE_RECONCILE_INTERVAL": "0",
        ], logPath: logPath)
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        try TestServices.eventually("healthy") { try HTTPProbe.get("http://127.0.0.1:9181/healthz").status == 200 }
        // Core dumps are off in the running worker (RLIMIT_CORE 0; PR_SET_DUMPABLE 0 is checked in-process by
        // ProcessHardeningTests): a core file would hold decrypted card data and keys.
        let limits = try String(contentsOfFile: "/proc/\(worker.pid)/limits", encoding: .utf8)
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }.map(String.init) ?? ""
        #expect(core.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"], "\(core)")
        let jobs = try (0..<60).map { try harness.job("proc-\($0)", token: harness.token()) }
        try harness.publishJobs(jobs)
        try TestServices.eventually("work started") { try harness.outcome("proc-0") != nil }
        worker.signal(SIGTERM)
        #expect(worker.wait() == 0, "clean exit after draining")
        let log = try String(contentsOfFile: logPath, encoding: .utf8)
        #expect(log.contains("\"event\":\"worker_stopped\""))
        #expect(log.contains("\"drained\":true"))
        // Nothing lost: every job is a payment or still waiting in the queue for the next worker.
        let database = try TestServices.database()
        defer { database.close() }
        let payments = try database.query("SELECT count(*)::bigint AS n FROM payments WHERE job_id LIKE 'proc-%'")[0].decode("n", as: Int64.self)
        #expect(Int(payments) + (try harness.base.depth("paypipe.decrypt")) == 60)
        #expect(try harness.base.depth("paypipe.authorize") == Int(payments))
    }

    /// Outside sandbox every worker refuses a replacement Apple Pay trust root (exit 78, naming the variable); it used
    /// to be honoured with a warning, so anyone with the sandbox root's key could mint tokens production accepted.
    @Test(arguments: ["paypipe-decrypt", "paypipe-authorize", "paypipe-submit", "paypipe-notify"])
    func productionRefusesAReplacedTrustRoot(worker: String) throws {
        let harness = try DecryptHarness()
        let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("trust-root-\(UUID()).log").path
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        let process = try ChildProcess.spawn(Self.binaryDirectory + "/" + worker, [], environment: [
            "PAYPIPE_ENV": "production",
            "PAYPIPE_AMQP_URL": try TestServices.amqpsURL(), "PAYPIPE_DATABASE_URL": try TestServices.databaseTLSURL(),
            "PAYPIPE_DATA_KEY_FILE": harness.sandbox.dataKeyPath, "PAYPIPE_APPLEPAY_TRUST_ROOT": harness.sandbox.trustRootPath,
            "PAYPIPE_METRICS_PORT": "0", "PAYPIPE_METRICS_HOST": "127.0.0.1", "PAYPIPE_RECONCILE_INTERVAL": "0",
        ], logPath: logPath)
        let status = process.wait(timeout: 20)
        if status == nil {
            process.signal(SIGKILL)
            _ = process.wait()
        }
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        #expect(status == 78, "\(worker) did not refuse the trust root: \(log)")
        #expect(log.contains("PAYPIPE_APPLEPAY_TRUST_ROOT"), "\(log)")
    }

    @Test func invalidConfigurationNamesTheVariable() throws {
        let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("decrypt-\(UUID()).log").path
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        let status = try ChildProcess.spawn(Self.binaryDirectory + "/paypipe-decrypt", [],
                                            environment: ["PAYPIPE_PREFETCH": "many"], logPath: logPath).wait()
        #expect(status == 78)
        #expect(try String(contentsOfFile: logPath, encoding: .utf8).contains("PAYPIPE_PREFETCH"))
    }
}
}
