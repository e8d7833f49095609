import Foundation
import HTTP

/// The real `paypipe-gateway-sim` executable on a free port, configured through its documented variables, for the
/// processors' own SDK contract tests. `stop()` ends it (SIGTERM) and removes its log.
struct GatewaySimulatorProcess {
    let baseURL: String
    private let process: ChildProcess
    private let log: String

    init(_ environment: [String: String]) throws {
        let port = try PipelineProcesses.freePort()
        log = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-contract-sim-\(UUID().uuidString).log").path
        process = try ChildProcess.spawn(PipelineProcesses.binary("paypipe-gateway-sim"), [], environment: environment.merging([
            "PAYPIPE_SIM_HOST": "127.0.0.1", "PAYPIPE_SIM_PORT": String(port), "PAYPIPE_SIM_THREADS": "2",
        ]) { _, fixed in fixed }, logPath: log)
        let baseURL = "http://127.0.0.1:\(port)"
        self.baseURL = baseURL
        do {
            try TestServices.eventually(timeout: 30, "paypipe-gateway-sim listening") {
                try HTTPClient().send(HTTPRequest(url: baseURL + "/_sim/health")).status == 200
            }
        } catch {
            stop()
            throw error
        }
    }

    func stop() {
        process.signal(SIGTERM)
        _ = process.wait(timeout: 10)
        try? FileManager.default.removeItem(atPath: log)
    }
}
