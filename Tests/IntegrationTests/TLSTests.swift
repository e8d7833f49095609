import AMQP
import Foundation
import PaymentStages
import Pipeline
import Postgres
import Testing

extension Integration {
/// RabbitMQ over amqps:// and PostgreSQL with sslmode=verify-full against the local TLS services: the happy paths
/// prove the connection really is encrypted, the unhappy ones that verification is really on (a foreign CA and a
/// host name outside the certificate are refused). Last, a real worker in production mode on those URLs.
@Suite struct TLSTests {
    /// A second, unrelated CA (openssl, like scripts/services makes the real one) in a temporary folder.
    static func foreignCA() throws -> (path: String, cleanup: () -> Void) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("foreign-ca-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificate = directory.appendingPathComponent("ca.pem").path
        let output = try ChildProcess.runCapturingOutput("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", directory.appendingPathComponent("ca.key").path, "-out", certificate,
            "-days", "1", "-subj", "/CN=Not the PayPipe CA", "-addext", "basicConstraints=critical,CA:TRUE",
        ])
        guard output.status == 0 else { throw TestFailure("openssl req exited \(output.status): \(output.text)") }
        return (certificate, { try? FileManager.default.removeItem(at: directory) })
    }

    @Test func amqpsPublishWithConfirmAndConsumeRoundTrip() throws {
        let configuration = try AMQPConfiguration(url: try TestServices.amqpsURL())
        #expect(configuration.tls?.verifyPeer == true && configuration.tls?.verifyHostname == true)
        #expect(configuration.tls?.caCertificatePath == (try TestServices.tlsDirectory()) + "/ca.pem")
        #expect(configuration.user != "guest")
        let queue = "paypipe.tls-test.\(UUID().uuidString.prefix(8))"
        let topology = AMQPTopology(queues: [AMQPQueue(name: queue, durable: false)])
        let publisher = AMQPPublisher(configuration: configuration, topology: topology)
        defer { publisher.close() }
        let consumer = AMQPConsumer(configuration: configuration, topology: topology, queue: queue, prefetch: 10)
        defer { consumer.close() }
        let body = Array("{\"over\":\"tls\"}".utf8)
        try publisher.publish(AMQPOutboundMessage(exchange: "", routingKey: queue, body: body), timeout: 20)
        consumer.start()
        let deliveries = consumer.receive(maxCount: 1, timeout: 20)
        #expect(deliveries.map(\.body) == [body])
        consumer.ack(deliveries)

        // The broker's own view: this user's connections are TLS ones.
        let listing = try ChildProcess.runCapturingOutput("/bin/bash", [TestServices.servicesScript, "rabbitmqctl", "list_connections", "-q", "user", "ssl", "ssl_protocol"])
        #expect(listing.status == 0, "\(listing.text)")
        let mine = listing.text.split(separator: "\n").filter { $0.hasPrefix("\(configuration.user)\t") }
        #expect(!mine.isEmpty, "\(listing.text)")
        #expect(mine.allSatisfy { $0.contains("\ttrue\t") && $0.contains("tlsv1.") }, "\(listing.text)")
        let admin = try TestServices.amqp()
        defer { admin.close() }
        _ = try admin.deleteQueue(queue)
    }

    @Test func amqpsWithAForeignCAIsRefusedWithATLSError() throws {
        let foreign = try Self.foreignCA()
        defer { foreign.cleanup() }
        var configuration = try AMQPConfiguration(url: try TestServices.amqpsURL())
        configuration.tls?.caCertificatePath = foreign.path
        configuration.connectTimeoutSeconds = 5
        let error = #expect(throws: AMQPError.self) { try AMQPConnection(configuration: configuration) }
        let text = error.map { "\($0)" } ?? ""
        #expect(text.contains("TLS"), "\(text)")
        #expect(text.contains("certificate"), "\(text)")
        #expect(!text.contains(configuration.password), "no password in the error")
    }

    @Test func postgresVerifyFullIsEncryptedAndAuthenticatesTheNonDefaultUser() throws {
        let configuration = try PostgresConfiguration(url: try TestServices.databaseTLSURL())
        #expect(configuration.sslMode == .verifyFull)
        let connection = try PostgresConnection(configuration: configuration)
        defer { connection.close() }
        let row = try connection.query("SELECT ssl, version, current_user::text AS who FROM pg_stat_ssl WHERE pid = pg_backend_pid()")[0]
        #expect(try row.decode("ssl", as: Bool.self))
        #expect(try row.decode("version", as: String?.self)?.hasPrefix("TLSv1.") == true)
        #expect(try row.decode("who", as: String.self) == "paypipe")

        // The same user without TLS is refused by pg_hba (hostnossl … reject): its password never travels in clear.
        var plain = configuration
        plain.sslMode = .disable
        #expect(throws: PostgresError.self) { try PostgresConnection(configuration: plain) }
    }

    @Test func postgresVerifyFullRefusesAHostNameOutsideTheCertificate() throws {
        var configuration = try PostgresConfiguration(url: try TestServices.databaseTLSURL())
        // Same server (hostaddr), but a name the certificate (DNS:localhost, IP:127.0.0.1) does not list.
        configuration.host = "paypipe-not-in-san.invalid"
        configuration.additionalParameters["hostaddr"] = "127.0.0.1"
        let error = #expect(throws: PostgresError.self) { try PostgresConnection(configuration: configuration) }
        #expect("\(error.map { "\($0)" } ?? "")".contains("does not match host name"), "\(String(describing: error))")

        let foreign = try Self.foreignCA()
        defer { foreign.cleanup() }
        var untrusted = try PostgresConfiguration(url: try TestServices.databaseTLSURL())
        untrusted.sslRootCert = foreign.path
        let chain = #expect(throws: PostgresError.self) { try PostgresConnection(configuration: untrusted) }
        #expect("\(chain.map { "\($0)" } ?? "")".contains("certificate verify failed"), "\(String(describing: chain))")
    }

    /// `paypipe-decrypt` as production runs it: PAYPIPE_ENV=production (so the connection policy and the key-file
    /// check apply), amqps:// and verify-full URLs with the non-default user, and Apple's pinned root only (production
    /// refuses a replacement root). It must become healthy and carry a job through both TLS connections: consume it,
    /// record the payment (a sandbox token does not chain to Apple's root, so it is `failed certificate_invalid`) and
    /// hand it to notify.
    @Test func productionWorkerOverTLSBecomesHealthyAndProcessesAJob() throws {
        let harness = try DecryptHarness()
        let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("decrypt-tls-\(UUID()).log").path
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        let metricsPort = 9_501
        let worker = try ChildProcess.spawn(WorkerProcessTests.binaryDirectory + "/paypipe-decrypt", [], environment: [
            "PAYPIPE_ENV": "production",
            "PAYPIPE_AMQP_URL": try TestServices.amqpsURL(), "PAYPIPE_DATABASE_URL": try TestServices.databaseTLSURL(),
            "PAYPIPE_DATA_KEY_FILE": harness.sandbox.dataKeyPath,
            "PAYPIPE_METRICS_PORT": String(metricsPort), "PAYPIPE_METRICS_HOST": "127.0.0.1",
            "PAYPIPE_RECONCILE_INTERVAL": "0", "PAYPIPE_RETRY_DELAYS": "300ms",
        ], logPath: logPath)
        defer {
            worker.signal(SIGTERM)
            worker.wait()
        }
        let log = { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        do {
            try TestServices.eventually(timeout: 30, "healthy over TLS") {
                try HTTPProbe.get("http://127.0.0.1:\(metricsPort)/healthz").status == 200
            }
        } catch {
            Issue.record("worker log: \(log())")
            throw error
        }
        try harness.publishJobs([try harness.job("tls-1", token: harness.token())])
        try TestServices.eventually("recorded by the TLS worker") { try harness.outcome("tls-1") != nil }
        let outcome = try #require(try harness.outcome("tls-1"))
        #expect(outcome.status == "failed" && outcome.code == "certificate_invalid", "only Apple's root is trusted: \(outcome)")
        try TestServices.eventually("handed to notify") { try harness.base.depth("paypipe.notify") == 1 }
        #expect(try harness.base.depth("paypipe.authorize") == 0)
        #expect(!log().contains(try TestServices.amqpsURL()), "the URL with its password is never logged")
        #expect(!log().contains("configuration_invalid"))
    }
}
}
