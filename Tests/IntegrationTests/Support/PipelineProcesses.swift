import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Pipeline

/// The whole sandbox stack as real processes, the way scripts/demo runs it: a fresh sandbox (PKI, data key,
/// merchant) whose gateway is a `paypipe-gateway-sim` and whose webhook is a `paypipe-webhook-receiver` on free
/// ports, and the five workers (the four stages and operations), all from `.build/debug` (`swift build` first). `stop()` sends SIGTERM to
/// each and waits, so the workers' graceful shutdown is exercised too.
final class PipelineProcesses {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let binaries = packageRoot.appendingPathComponent(".build/debug")
    static let workers = ["paypipe-decrypt", "paypipe-authorize", "paypipe-submit", "paypipe-notify", "paypipe-operations"]

    let directory: URL
    let sandboxDirectory: String
    let environment: [String: String]
    /// Where the sandbox merchant's webhook (`paypipe-webhook-receiver`) listens on loopback.
    let receiverPort: Int
    var receiverLog: String { directory.appendingPathComponent("webhook-receiver.log").path }
    private var children: [(name: String, process: ChildProcess)] = []

    static func binary(_ name: String) -> String { binaries.appendingPathComponent(name).path }

    /// Runs `paypipe ARGS` with the stack's environment; throws unless it exits 0.
    @discardableResult
    func paypipe(_ arguments: [String]) throws -> String {
        let output = try ChildProcess.runCapturingOutput(Self.binary("paypipe"), arguments, environment: environment)
        guard output.status == 0 else {
            throw TestFailure("paypipe \(arguments.joined(separator: " ")) exited \(output.status): \(output.text)")
        }
        return output.text
    }

    /// Resets the shared broker and database, creates the sandbox and merchant, starts every process.
    /// `processEnvironment` adds variables for single processes, by executable name.
    /// `workers`: the stage workers to run (all five by default).
    init(processEnvironment: [String: [String: String]] = [:], workers: [String] = PipelineProcesses.workers) throws {
        for name in ["paypipe", "paypipe-gateway-sim", "paypipe-webhook-receiver"] + workers
        where !FileManager.default.isExecutableFile(atPath: Self.binary(name)) {
            throw TestFailure("build first (swift build): \(Self.binary(name)) is missing")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        sandboxDirectory = directory.appendingPathComponent("sandbox").path
        let gatewayPort = try Self.freePort()
        receiverPort = try Self.freePort()
        environment = [
            "PAYPIPE_ENV": "sandbox",
            "PAYPIPE_AMQP_URL": TestServices.amqpURL, "PAYPIPE_DATABASE_URL": TestServices.databaseURL,
            "PAYPIPE_SANDBOX_DIR": sandboxDirectory,
            "PAYPIPE_DATA_KEY_FILE": sandboxDirectory + "/data.key",
            "PAYPIPE_APPLEPAY_TRUST_ROOT": sandboxDirectory + "/pki/root.cert.pem",
            "PAYPIPE_METRICS_PORT": "0", "PAYPIPE_METRICS_HOST": "127.0.0.1",
            "PAYPIPE_GATEWAY_TIMEOUT": "3s", "PAYPIPE_WEBSERVICES_TIMEOUT": "3s", "PAYPIPE_RECONCILE_GRACE": "2s",
            "PAYPIPE_SIM_PORT": String(gatewayPort), "PAYPIPE_RECEIVER_PORT": String(receiverPort),
        ]
        try TestServices.resetDatabase()
        try TestServices.resetBroker(retrySchedule: try WorkerConfiguration(stage: nil, environment: EnvironmentReader(environment)).retrySchedule)
        try paypipe(["sandbox", "init", "--dir", sandboxDirectory,
                     "--gateway-url", "http://127.0.0.1:\(gatewayPort)",
                     "--webhook-url", "http://127.0.0.1:\(receiverPort)/webhooks"])
        try paypipe(["merchant", "apply", "--file", sandboxDirectory + "/merchant.json"])
        try paypipe(["merchant", "apply", "--file", sandboxDirectory + "/merchant-jwt.json"])
        let services = try Self.servicesEnvironment(sandboxDirectory + "/services.env")
        do {
            try start("paypipe-gateway-sim", extra: services.merging(processEnvironment["paypipe-gateway-sim"] ?? [:]) { $1 })
            try start("paypipe-webhook-receiver", extra: services.merging(processEnvironment["paypipe-webhook-receiver"] ?? [:]) { $1 },
                      log: receiverLog)
            for worker in workers { try start(worker, extra: processEnvironment[worker] ?? [:]) }
            try TestServices.eventually(timeout: 30, "receiver listening") {
                (try? String(contentsOfFile: receiverLog, encoding: .utf8))?.contains("receiver_listening") == true
            }
        } catch {
            stop()
            throw error
        }
    }

    deinit {
        stop()
    }

    private func start(_ name: String, extra: [String: String] = [:], log: String? = nil) throws {
        let logPath = log ?? self.logPath(name)
        children.append((name, try ChildProcess.spawn(Self.binary(name), [], environment: environment.merging(extra) { $1 }, logPath: logPath)))
    }

    /// A worker's log (JSON lines, appended to across restarts).
    func logPath(_ name: String) -> String {
        directory.appendingPathComponent("\(name).log").path
    }

    /// The running process of an executable.
    func process(_ name: String) -> ChildProcess? {
        children.last { $0.name == name }?.process
    }

    /// Stops one worker (SIGTERM, graceful drain) and starts it again with `extra` on top of the stack's environment,
    /// e.g. `paypipe-notify` in production mode.
    func restart(_ name: String, extra: [String: String]) throws {
        if let index = children.lastIndex(where: { $0.name == name }) {
            children[index].process.signal(SIGTERM)
            children[index].process.wait()
            children.remove(at: index)
        }
        try start(name, extra: extra)
    }

    /// The `/healthz` + `/metrics` port a worker chose (`PAYPIPE_METRICS_PORT=0`), from its latest `worker_started` line.
    func metricsPort(_ name: String) -> Int? {
        let text = (try? String(contentsOfFile: logPath(name), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").reversed().lazy.filter { $0.contains("\"worker_started\"") }.compactMap {
            ((try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any])?["metricsPort"] as? Int
        }.first
    }

    /// SIGTERM to every process, then waits for each; idempotent. Keeps the logs for a failing test to read.
    func stop() {
        for child in children { child.process.signal(SIGTERM) }
        for child in children { child.process.wait() }
        children = []
    }

    func removeFiles() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A loopback port the kernel just handed out (bind to port 0, read it, close): unlike a random pick, it is not
    /// in use by another listener or an outgoing connection, and the kernel does not hand it out again right away.
    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw TestFailure("socket() failed: \(errno)") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        guard bound else { throw TestFailure("bind() to an ephemeral port failed: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// `KEY='value'` lines as `paypipe sandbox init` writes them.
    static func servicesEnvironment(_ path: String) throws -> [String: String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") where line.contains("=") && !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1)
            var value = String(parts.count > 1 ? parts[1] : "")
            if value.count >= 2, value.hasPrefix("'"), value.hasSuffix("'") { value = String(value.dropFirst().dropLast()) }
            values[String(parts[0])] = value
        }
        return values
    }

    /// The receiver's `webhook_verified` log lines, as JSON objects.
    func verifiedWebhooks() -> [[String: Any]] {
        let text = (try? String(contentsOfFile: receiverLog, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.contains("webhook_verified") }.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }
}
