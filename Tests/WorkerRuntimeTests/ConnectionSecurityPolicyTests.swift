import Foundation
import Testing
@testable import WorkerRuntime

/// The start-up rules outside sandbox: no default URLs, no `guest`, a database credential, verified TLS to
/// remote hosts. Each case asserts the variable named in the error, so an operator knows what to fix.
@Suite struct ConnectionSecurityPolicyTests {
    static let broker = "amqps://paypipe:s3cret@rabbit.internal:5671/%2f?cacertfile=/etc/paypipe/ca.pem"
    static let database = "postgresql://paypipe:s3cret@db.internal:5432/paypipe?sslmode=verify-full&sslrootcert=/etc/paypipe/ca.pem"

    static func configuration(_ values: [String: String?]) throws(ConfigurationError) -> WorkerConfiguration {
        var environment = ["PAYPIPE_AMQP_URL": broker, "PAYPIPE_DATABASE_URL": database]
        for (key, value) in values { environment[key] = value }
        return try WorkerConfiguration(defaultMetricsPort: 9101, environment: EnvironmentReader(environment))
    }

    /// The error a production worker stops with, or nil if it starts.
    static func refusal(_ values: [String: String?]) -> ConfigurationError? {
        do {
            _ = try configuration(values)
            return nil
        } catch {
            return error
        }
    }

    @Test func verifiedRemoteConnectionsWithCredentialsAreAccepted() throws {
        let configuration = try Self.configuration([:])
        #expect(configuration.environment == .production)
        #expect(!configuration.insecureTransportAllowed)
        // A client certificate is a database credential too, and loopback may stay plain (sidecar proxies).
        _ = try Self.configuration(["PAYPIPE_DATABASE_URL": "postgresql://paypipe@db.internal/paypipe?sslmode=verify-full&sslcert=/c.pem"])
        _ = try Self.configuration(["PAYPIPE_AMQP_URL": "amqp://paypipe:s3cret@127.0.0.1:5672/%2f",
                                    "PAYPIPE_DATABASE_URL": "postgresql://paypipe:s3cret@localhost/paypipe"])
        // Password from libpq's own environment; a Unix socket never leaves the host.
        _ = try Self.configuration(["PAYPIPE_DATABASE_URL": "postgresql://paypipe@%2Fvar%2Frun%2Fpostgresql/paypipe", "PGPASSFILE": "/run/secrets/pgpass"])
    }

    @Test(arguments: ["PAYPIPE_AMQP_URL", "PAYPIPE_DATABASE_URL"])
    func missingURLsAreRefusedOutsideSandbox(variable: String) {
        let error = Self.refusal([variable: nil])
        #expect(error?.variable == variable)
        #expect(error?.problem.contains("must be set") == true)
    }

    @Test(arguments: [
        "amqps://guest:guest@rabbit.internal/%2f",
        "amqps://rabbit.internal/%2f",                  // no user info: the client's guest/guest default
        "amqps://guest:chosen-password@rabbit.internal/%2f",
    ])
    func theGuestAccountIsRefused(url: String) {
        let error = Self.refusal(["PAYPIPE_AMQP_URL": url])
        #expect(error?.variable == "PAYPIPE_AMQP_URL")
        #expect(error?.problem.contains("guest") == true)
    }

    @Test func brokerPasswordIsRequired() {
        let error = Self.refusal(["PAYPIPE_AMQP_URL": "amqps://paypipe@rabbit.internal/%2f"])
        #expect(error?.variable == "PAYPIPE_AMQP_URL")
        #expect(error?.problem.contains("no password") == true)
    }

    @Test(arguments: [
        "postgresql://paypipe@db.internal/paypipe?sslmode=verify-full",      // trust authentication only
        "postgresql://db.internal/paypipe?sslmode=verify-full",              // not even a user
        "postgresql://paypipe:@db.internal/paypipe?sslmode=verify-full",     // empty password
    ])
    func databaseCredentialIsRequired(url: String) {
        let error = Self.refusal(["PAYPIPE_DATABASE_URL": url])
        #expect(error?.variable == "PAYPIPE_DATABASE_URL")
    }

    @Test func plainAMQPToARemoteHostIsRefused() {
        let error = Self.refusal(["PAYPIPE_AMQP_URL": "amqp://paypipe:s3cret@rabbit.internal/%2f"])
        #expect(error?.variable == "PAYPIPE_AMQP_URL")
        #expect(error?.problem.contains("amqps://") == true)
    }

    /// A connection may go to any node of a cluster list: each one is held to the transport rule.
    @Test func everyNodeOfABrokerListIsChecked() throws {
        let error = Self.refusal(["PAYPIPE_AMQP_URL": "amqp://paypipe:s3cret@127.0.0.1:5672/%2f,amqp://paypipe:s3cret@rabbit-2.internal:5672/%2f"])
        #expect(error?.variable == "PAYPIPE_AMQP_URL")
        #expect(error?.problem.contains("rabbit-2.internal") == true)
        _ = try Self.configuration(["PAYPIPE_AMQP_URL": "amqp://paypipe:s3cret@127.0.0.1:5672/%2f,amqp://paypipe:s3cret@localhost:5673/%2f"])
        _ = try Self.configuration(["PAYPIPE_AMQP_URL": "amqps://paypipe:s3cret@rabbit-1.internal/%2f?cacertfile=/ca.pem,amqps://paypipe:s3cret@rabbit-2.internal/%2f?cacertfile=/ca.pem"])
    }

    @Test func unverifiedAMQPSIsRefused() {
        let error = Self.refusal(["PAYPIPE_AMQP_URL": "amqps://paypipe:s3cret@127.0.0.1/%2f?verify=verify_none"])
        #expect(error?.variable == "PAYPIPE_AMQP_URL")
        #expect(error?.problem.contains("verify_none") == true)
    }

    @Test(arguments: ["", "?sslmode=require", "?sslmode=verify-ca&sslrootcert=/ca.pem", "?sslmode=prefer"])
    func databaseTLSBelowVerifyFullToARemoteHostIsRefused(query: String) {
        let error = Self.refusal(["PAYPIPE_DATABASE_URL": "postgresql://paypipe:s3cret@db.internal/paypipe" + query])
        #expect(error?.variable == "PAYPIPE_DATABASE_URL")
        #expect(error?.problem.contains("verify-full") == true)
    }

    /// libpq may connect to any host of a multi-host URL (after a failover, to the last one): every one is checked.
    @Test(arguments: [
        "postgresql://paypipe:s3cret@127.0.0.1:5432,db.internal:5432/paypipe?target_session_attrs=read-write",
        "postgresql://paypipe:s3cret@localhost,db.internal/paypipe?sslmode=require",
        "postgresql://paypipe:s3cret@/paypipe?host=%2Ftmp,db.internal",
        // libpq keeps the last of repeated keys: an appended sslmode=disable is what is checked.
        "postgresql://paypipe:s3cret@db.internal/paypipe?sslmode=verify-full&sslrootcert=/ca.pem&sslmode=disable",
    ])
    func everyHostOfAMultiHostDatabaseURLIsChecked(url: String) {
        let error = Self.refusal(["PAYPIPE_DATABASE_URL": url])
        #expect(error?.variable == "PAYPIPE_DATABASE_URL")
        #expect(error?.problem.contains("db.internal") == true, "\(String(describing: error))")
    }

    @Test func multiHostDatabaseURLsPassWhenEveryHostIsLocalOrVerified() throws {
        _ = try Self.configuration(["PAYPIPE_DATABASE_URL": "postgresql://paypipe:s3cret@127.0.0.1:5432,localhost:5433/paypipe?target_session_attrs=read-write"])
        _ = try Self.configuration(["PAYPIPE_DATABASE_URL": "postgresql://paypipe:s3cret@db-a.internal,db-b.internal/paypipe?sslmode=verify-full&sslrootcert=/ca.pem&target_session_attrs=read-write"])
        // PGHOST (a list, too) counts only when the URL names no host.
        #expect(Self.refusal(["PAYPIPE_DATABASE_URL": "postgresql://paypipe:s3cret@/paypipe", "PGHOST": "127.0.0.1,db.internal"])?.variable == "PAYPIPE_DATABASE_URL")
        _ = try Self.configuration(["PAYPIPE_DATABASE_URL": "postgresql://paypipe:s3cret@localhost/paypipe", "PGHOST": "db.internal"])
    }

    @Test func pgsslmodeFromTheEnvironmentCounts() throws {
        _ = try Self.configuration(["PAYPIPE_DATABASE_URL": "postgresql://paypipe:s3cret@db.internal/paypipe", "PGSSLMODE": "verify-full"])
    }

    @Test func insecureTransportCanBeAllowedExplicitlyButNotDefaultCredentials() throws {
        let allowed = try Self.configuration([
            "PAYPIPE_ALLOW_INSECURE_TRANSPORT": "1",
            "PAYPIPE_AMQP_URL": "amqp://paypipe:s3cret@rabbit.internal/%2f",
            "PAYPIPE_DATABASE_URL": "postgresql://paypipe:s3cret@db.internal/paypipe",
        ])
        #expect(allowed.insecureTransportAllowed)
        let guest = Self.refusal(["PAYPIPE_ALLOW_INSECURE_TRANSPORT": "1", "PAYPIPE_AMQP_URL": "amqp://guest:guest@rabbit.internal/%2f"])
        #expect(guest?.variable == "PAYPIPE_AMQP_URL")
        #expect(Self.refusal(["PAYPIPE_ALLOW_INSECURE_TRANSPORT": "perhaps"])?.variable == "PAYPIPE_ALLOW_INSECURE_TRANSPORT")
    }

    @Test func sandboxKeepsTheLocalDefaults() throws {
        let configuration = try WorkerConfiguration(defaultMetricsPort: 9101, environment: EnvironmentReader(["PAYPIPE_ENV": "sandbox"]))
        #expect(configuration.amqpURL == WorkerConfiguration.defaultAMQPURL)
    }

    @Test func errorsNeverEchoPasswords() {
        let cases: [[String: String?]] = [
            ["PAYPIPE_AMQP_URL": "amqp://guest:hunter2@rabbit.internal/%2f"],
            ["PAYPIPE_AMQP_URL": "amqp://paypipe:hunter2@rabbit.internal/%2f"],
            ["PAYPIPE_DATABASE_URL": "postgresql://paypipe:hunter2@db.internal/paypipe?sslmode=require"],
        ]
        for values in cases {
            let error = Self.refusal(values)
            #expect(error != nil)
            #expect(error?.description.contains("hunter2") == false)
        }
    }

    @Test func clientKeyFilesMustBePrivate() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("policy-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("client.key").path
        #expect(FileManager.default.createFile(atPath: key, contents: Data("k".utf8), attributes: [.posixPermissions: 0o644]))
        let amqp = Self.refusal(["PAYPIPE_AMQP_URL": Self.broker + "&certfile=/c.pem&keyfile=\(key)"])
        #expect(amqp?.variable == "PAYPIPE_AMQP_URL keyfile")
        #expect(amqp?.problem.contains("chmod 600 \(key)") == true)
        let database = Self.refusal(["PAYPIPE_DATABASE_URL": Self.database + "&sslcert=/c.pem&sslkey=\(key)"])
        #expect(database?.variable == "PAYPIPE_DATABASE_URL sslkey")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key)
        _ = try Self.configuration(["PAYPIPE_AMQP_URL": Self.broker + "&certfile=/c.pem&keyfile=\(key)"])
    }

    @Test func loopbackDetection() {
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "::1", "/var/run/postgresql"] {
            #expect(ConnectionSecurityPolicy.isLocal(host), "\(host)")
        }
        for host in ["127.0.0.1.evil.example", "10.0.0.1", "db.internal", "128.0.0.1", "localhost.example"] {
            #expect(!ConnectionSecurityPolicy.isLocal(host), "\(host)")
        }
    }
}
