import Foundation
import Pipeline
import Testing

extension Integration {
/// `PAYPIPE_AMQP_PASSWORD_FILE` and `PAYPIPE_DATABASE_PASSWORD_FILE` in a real production worker: the URLs name only
/// the non-default `paypipe` user, the passwords sit in private files (as a Kubernetes Secret volume mounts them), and
/// the worker becomes ready over both TLS connections and records a job. A readable password file stops it first.
@Suite struct PasswordFileProcessTests {
    @Test func aProductionWorkerTakesBothPasswordsFromFiles() throws {
        let harness = try DecryptHarness()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("password-files-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let password = try String(contentsOfFile: try TestServices.tlsDirectory() + "/service.password", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let amqpURL = try TestServices.amqpsURL().replacingOccurrences(of: "paypipe:\(password)@", with: "paypipe@")
        let databaseURL = try TestServices.databaseTLSURL().replacingOccurrences(of: "paypipe:\(password)@", with: "paypipe@")
        #expect(!amqpURL.contains(password) && !databaseURL.contains(password))
        var files: [String: String] = [:]
        for variable in ["PAYPIPE_AMQP_PASSWORD_FILE", "PAYPIPE_DATABASE_PASSWORD_FILE"] {
            let path = directory.appendingPathComponent(variable).path
            #expect(FileManager.default.createFile(atPath: path, contents: Data((password + "\n").utf8)))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
            files[variable] = path
        }
        let metricsPort = 9_502
        let environment = [
            "PAYPIPE_ENV": "production", "PAYPIPE_AMQP_URL": amqpURL, "PAYPIPE_DATABASE_URL": databaseURL,
            "PAYPIPE_DATA_KEY_FILE": harness.sandbox.dataKeyPath,
            "PAYPIPE_METRICS_PORT": String(metricsPort), "PAYPIPE_METRICS_HOST": "127.0.0.1",
            "PAYPIPE_RECONCILE_INTERVAL": "0", "PAYPIPE_RETRY_DELAYS": "300ms",
        ].merging(files) { $1 }
        let binary = WorkerProcessTests.binaryDirectory + "/paypipe-decrypt"

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: try #require(files["PAYPIPE_AMQP_PASSWORD_FILE"]))
        let refused = try ChildProcess.runCapturingOutput(binary, [], environment: environment)
        #expect(refused.status == 78, "\(refused.text)")
        #expect(refused.text.contains("PAYPIPE_AMQP_PASSWORD_FILE") && refused.text.contains("chmod 600"), "\(refused.text)")
        #expect(!refused.text.contains(password), "the password is never printed")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: try #require(files["PAYPIPE_AMQP_PASSWORD_FILE"]))

        let logPath = directory.appendingPathComponent("worker.log").path
        let worker = try ChildProcess.spawn(binary, [], environment: environment, logPath: logPath)
        defer {
            worker.signal(SIGTERM)
            worker.wait()
        }
        let log = { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        do {
            try TestServices.eventually(timeout: 30, "ready over TLS with the passwords from files") {
                try HTTPProbe.get("http://127.0.0.1:\(metricsPort)/readyz").status == 200
            }
        } catch {
            Issue.record("worker log: \(log())")
            throw error
        }
        try harness.publishJobs([try harness.job("password-files-1", token: harness.token())])
        try TestServices.eventually("recorded through the database connection") { try harness.outcome("password-files-1") != nil }
        #expect(!log().contains(password), "the password is never logged")
    }
}
}
