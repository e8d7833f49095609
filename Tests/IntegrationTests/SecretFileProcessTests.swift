import Foundation
import PaymentStages
import PayPipeDevTools
import Pipeline
import Testing

extension Integration {
/// Secret files outside sandbox. The real `paypipe-decrypt` refuses a data key file that others can read: exit 78 (EX_CONFIG)
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

    /// `paypipe merchant apply` (through ``MerchantStore``) reads merchant private keys from files: outside sandbox
    /// a readable key file is refused before anything is written, naming the identity, the file and the fix.
    @Test func merchantPrivateKeyFilesMustBePrivateOutsideSandbox() throws {
        try TestServices.resetDatabase()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("merchant-keys-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sandbox = try SandboxEnvironment.open(directory: directory)
        let vault = DataVault(keyring: try DataKeyring.load(EnvironmentReader(["PAYPIPE_DATA_KEY_FILE": sandbox.dataKeyPath]), deployment: .sandbox))
        var document = sandbox.merchantDocument()
        // Production takes only an https:// gateway (card data); the sandbox document's is the local simulator.
        document.gateway?.baseUrl = "https://webservices.securetrading.net"
        let keyPath = directory + "/" + (try #require(document.identities.first?.privateKeyFile))
        let database = try TestServices.database()
        defer { database.close() }
        let store = MerchantStore(vault: vault)
        let base = URL(fileURLWithPath: directory)

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: keyPath)
        let error = #expect(throws: ConfigurationError.self) { try store.apply(document, baseDirectory: base, deployment: .production, on: database) }
        #expect(error?.variable.contains("identities[0] private key") == true)
        #expect(error?.problem.contains("\(keyPath) has mode 0644") == true)
        #expect(error?.problem.contains("chmod 600") == true)
        #expect(try store.listIds(on: database).isEmpty, "nothing applied")
        try store.apply(document, baseDirectory: base, deployment: .sandbox, on: database)

        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
        try store.apply(document, baseDirectory: base, deployment: .production, on: database)
        #expect(document.containsInlineSecrets, "the sandbox document holds JWT and webhook secrets, so `merchant apply` checks it too")
    }

    /// The CLI as an operator runs it in production (TLS database URL with the non-default user): a merchant
    /// document holding secrets must itself be private. Exit 78 with the fix; applied once it is 0600.
    @Test func merchantApplyRefusesAReadableDocumentWithSecrets() throws {
        try TestServices.resetDatabase()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("merchant-doc-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Production takes only an https:// gateway (card data), so this document names one.
        let sandbox = try SandboxEnvironment.open(directory: directory, endpoints: .init(gatewayURL: "https://webservices.securetrading.net"))
        let environment = [
            "PAYPIPE_ENV": "production", "PAYPIPE_DATABASE_URL": try TestServices.databaseTLSURL(),
            "PAYPIPE_DATA_KEY_FILE": sandbox.dataKeyPath,
        ]
        let paypipe = WorkerProcessTests.binaryDirectory + "/paypipe"
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: sandbox.merchantDocumentPath)
        let refused = try ChildProcess.runCapturingOutput(paypipe, ["merchant", "apply", "--file", sandbox.merchantDocumentPath], environment: environment)
        #expect(refused.status == 78, "\(refused.text)")
        #expect(refused.text.contains("\(sandbox.merchantDocumentPath) has mode 0644"), "\(refused.text)")
        #expect(refused.text.contains("chmod 600"), "\(refused.text)")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: sandbox.merchantDocumentPath)
        let applied = try ChildProcess.runCapturingOutput(paypipe, ["merchant", "apply", "--file", sandbox.merchantDocumentPath], environment: environment)
        #expect(applied.status == 0, "\(applied.text)")
        #expect(applied.text.contains(SandboxEnvironment.merchantId), "\(applied.text)")
    }
}
}
