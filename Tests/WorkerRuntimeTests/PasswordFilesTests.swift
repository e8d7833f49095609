import AMQP
import Foundation
import Postgres
import Testing
@testable import WorkerRuntime

/// `PAYPIPE_AMQP_PASSWORD_FILE` and `PAYPIPE_DATABASE_PASSWORD_FILE`: the password comes from a secret file, checked
/// like the data keys, and joins a URL that names only the user.
@Suite struct PasswordFilesTests {
    /// A password with every character a URL gives a meaning to.
    static let password = "p@ss:w/rd?&=%#, é"

    final class Scratch {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("passwords-\(UUID())")
        init() throws { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(at: directory) }

        func file(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
            let path = directory.appendingPathComponent(name).path
            #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            return path
        }
    }

    static func configuration(_ values: [String: String]) throws(ConfigurationError) -> WorkerConfiguration {
        try WorkerConfiguration(defaultMetricsPort: 9101, environment: EnvironmentReader(values))
    }

    @Test func theBrokerPasswordFileCompletesEveryURLOfAClusterList() throws {
        let scratch = try Scratch()
        let configuration = try Self.configuration([
            "PAYPIPE_ENV": "sandbox",
            "PAYPIPE_AMQP_URL": "amqp://paypipe@rabbit-1:5672/%2f?heartbeat=5,amqp://paypipe@rabbit-2:5672/%2f?heartbeat=5",
            "PAYPIPE_AMQP_PASSWORD_FILE": try scratch.file("amqp", Self.password + "\n"),
        ])
        let amqp = try AMQPConfiguration(url: configuration.amqpURL)
        #expect(amqp.user == "paypipe")
        #expect(amqp.password == Self.password, "percent-encoded into the URL, trailing line break dropped")
        #expect(amqp.nodes.map(\.host) == ["rabbit-1", "rabbit-2"])
        #expect(amqp.heartbeatSeconds == 5)
    }

    @Test func theDatabasePasswordFileIsAddedToTheURL() throws {
        let scratch = try Scratch()
        for url in ["postgresql://paypipe@db-1,db-2/paypipe", "postgresql://paypipe@db-1,db-2/paypipe?target_session_attrs=read-write"] {
            let configuration = try Self.configuration([
                "PAYPIPE_ENV": "sandbox", "PAYPIPE_DATABASE_URL": url,
                "PAYPIPE_DATABASE_PASSWORD_FILE": try scratch.file("pg", Self.password + "\r\n"),
            ])
            let database = try PostgresConfiguration(url: configuration.databaseURL)
            #expect(database.password == Self.password)
            #expect(database.user == "paypipe" && database.endpoints.count == 2)
        }
    }

    /// Outside sandbox a password file satisfies "the URL carries a password" (ConnectionSecurityPolicy rules 2 and 3),
    /// for the workers and for the database-only tools (`paypipe migrate`).
    @Test func aPasswordFileIsTheURLsCredentialOutsideSandbox() throws {
        let scratch = try Scratch()
        let urls = ["PAYPIPE_AMQP_URL": "amqp://paypipe@127.0.0.1:5672/%2f", "PAYPIPE_DATABASE_URL": "postgresql://paypipe@127.0.0.1/paypipe"]
        #expect(throws: ConfigurationError.self) { try Self.configuration(urls) }
        let files = ["PAYPIPE_AMQP_PASSWORD_FILE": try scratch.file("amqp", "broker-secret"),
                     "PAYPIPE_DATABASE_PASSWORD_FILE": try scratch.file("pg", "database-secret")]
        let configuration = try Self.configuration(urls.merging(files) { $1 })
        #expect(try AMQPConfiguration(url: configuration.amqpURL).password == "broker-secret")
        let tool = try ConnectionSecurityPolicy.databaseURL(EnvironmentReader(urls.merging(files) { $1 }), deployment: .production)
        #expect(try PostgresConfiguration(url: tool).password == "database-secret")
    }

    /// The same rule as the data keys' files: outside sandbox, group- or world-readable is refused, naming the variable.
    @Test(arguments: ["PAYPIPE_AMQP_PASSWORD_FILE", "PAYPIPE_DATABASE_PASSWORD_FILE"])
    func aReadableFileIsRefusedOutsideSandbox(variable: String) throws {
        let scratch = try Scratch()
        let path = try scratch.file("secret", "hunter2", mode: 0o644)
        let values = ["PAYPIPE_AMQP_URL": "amqp://paypipe:a@127.0.0.1:5672/%2f", "PAYPIPE_DATABASE_URL": "postgresql://paypipe:b@127.0.0.1/paypipe"]
        var withFile = values
        withFile[variable] = path
        if variable == "PAYPIPE_AMQP_PASSWORD_FILE" { withFile["PAYPIPE_AMQP_URL"] = "amqp://paypipe@127.0.0.1:5672/%2f" }
        else { withFile["PAYPIPE_DATABASE_URL"] = "postgresql://paypipe@127.0.0.1/paypipe" }
        let error = #expect(throws: ConfigurationError.self) { try Self.configuration(withFile) }
        #expect(error?.variable == variable)
        #expect(error?.problem.contains("chmod 600 \(path)") == true)
        #expect(error?.description.contains("hunter2") == false)
        // Sandbox relaxes the mode check, as for every secret file.
        _ = try Self.configuration(withFile.merging(["PAYPIPE_ENV": "sandbox"]) { $1 })
    }

    @Test(arguments: [
        ("amqp://paypipe:inline@127.0.0.1/%2f", "PAYPIPE_AMQP_PASSWORD_FILE", "PAYPIPE_AMQP_URL"),   // two passwords
        ("amqp://127.0.0.1/%2f", "PAYPIPE_AMQP_PASSWORD_FILE", "PAYPIPE_AMQP_URL"),                  // no user to go with it
        ("postgresql://paypipe:inline@127.0.0.1/paypipe", "PAYPIPE_DATABASE_PASSWORD_FILE", "PAYPIPE_DATABASE_URL"),
        ("postgresql://paypipe@127.0.0.1/paypipe?password=inline", "PAYPIPE_DATABASE_PASSWORD_FILE", "PAYPIPE_DATABASE_URL"),
    ])
    func aURLThatCannotTakeThePasswordIsAUsageError(url: String, fileVariable: String, urlVariable: String) throws {
        let scratch = try Scratch()
        let error = #expect(throws: ConfigurationError.self) {
            try Self.configuration(["PAYPIPE_ENV": "sandbox", urlVariable: url, fileVariable: try scratch.file("secret", "hunter2")])
        }
        #expect(error?.variable == urlVariable)
        #expect(error?.problem.contains(fileVariable) == true)
        #expect(error?.description.contains("hunter2") == false)
    }

    @Test func anEmptyOrMissingFileIsRefused() throws {
        let scratch = try Scratch()
        for path in [try scratch.file("empty", "\n"), scratch.directory.appendingPathComponent("absent").path] {
            let error = #expect(throws: ConfigurationError.self) {
                try Self.configuration(["PAYPIPE_ENV": "sandbox", "PAYPIPE_AMQP_URL": "amqp://paypipe@127.0.0.1/%2f", "PAYPIPE_AMQP_PASSWORD_FILE": path])
            }
            #expect(error?.variable == "PAYPIPE_AMQP_PASSWORD_FILE")
        }
    }

    @Test func withoutTheFilesTheURLsAreUsedAsTheyAre() throws {
        let url = "amqp://paypipe:inline@127.0.0.1:5672/%2f"
        #expect(try Self.configuration(["PAYPIPE_ENV": "sandbox", "PAYPIPE_AMQP_URL": url]).amqpURL == url)
    }
}
