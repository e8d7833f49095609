import Foundation
import Testing

extension Integration {
/// The real `paypipe-decrypt` outside sandbox refuses a data key file that others can read: exit 78 (EX_CONFIG)
/// before it connects to anything, with one log line naming the variable, the file, its mode and the fix.
@Suite struct SecretFileProcessTests {
    @Test func readableDataKeyFileStopsAProductionWorker() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secret-file-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyPath = directory.appendingPathComponent("data.key").path
        let key = Data((0..<32).map { UInt8($0) }).base64EncodedString()
        #expect(FileManager.default.createFile(atPath: keyPath, contents: Data(key.utf8)))
        let environment = [
            "PAYPIPE_ENV": "production",
            // Credentials that pass the connection policy; never contacted, the key check comes first.
            "PAYPIPE_AMQP_URL": "amqp://paypipe:unused@127.0.0.1:1/%2f",
            "PAYPIPE_DATABASE_URL": "postgresql://paypipe:unused@127.0.0.1:1/paypipe",
            "PAYPIPE_DATA_KEY_FILE": keyPath, "PAYPIPE_METRICS_PORT": "0", "PAYPIPE_METRICS_HOST": "127.0.0.1",
        ]
        let binary = WorkerProcessTests.binaryDirectory + "/paypipe-decrypt"

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: keyPath)
        let refused = try ChildProcess.runCapturingOutput(binary, [], environment: environment)
        #expect(refused.status == 78, "\(refused.text)")
        #expect(refused.text.contains("configuration_invalid"), "\(refused.text)")
        #expect(refused.text.contains("PAYPIPE_DATA_KEY_FILE"), "\(refused.text)")
        #expect(refused.text.contains("\(keyPath) has mode 0644"), "\(refused.text)")
        #expect(refused.text.contains("chmod 600 \(keyPath)"), "\(refused.text)")
        #expect(!refused.text.contains(key), "the key itself is never printed")

        // With 0600 the key check passes and the worker starts (retrying the unreachable broker in the background).
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
        let logPath = directory.appendingPathComponent("accepted.log").path
        let accepted = try ChildProcess.spawn(binary, [], environment: environment, logPath: logPath)
        let log = { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        try TestServices.eventually("worker_started") { log().contains("\"event\":\"worker_started\"") }
        accepted.signal(SIGTERM)
        accepted.wait()
        #expect(!log().contains("PAYPIPE_DATA_KEY_FILE"), "\(log())")
    }
}
}
