import Testing
@testable import AMQP

@Suite("AMQPConfiguration URL parsing")
struct AMQPConfigurationTests {
    @Test func parsesPlainURLWithDefaults() throws {
        let configuration = try AMQPConfiguration(url: "amqp://guest:secret@127.0.0.1/%2f")
        #expect(configuration.user == "guest")
        #expect(configuration.password == "secret")
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 5672)
        #expect(configuration.vhost == "/")
        #expect(configuration.tls == nil)
        #expect(configuration.heartbeatSeconds == 10)
        #expect(configuration.connectTimeoutSeconds == 10)
        #expect(configuration.connectionName == "paypipe")
    }

    @Test(arguments: ["amqp://host", "amqp://host/", "amqp://host:5672"])
    func missingOrEmptyVhostIsSlash(url: String) throws {
        #expect(try AMQPConfiguration(url: url).vhost == "/")
    }

    @Test func percentDecodesCredentialsAndVhost() throws {
        let configuration = try AMQPConfiguration(url: "amqp://pay%40pipe:p%3Ass%2Fw@broker:15672/prod%2Fpayments")
        #expect(configuration.user == "pay@pipe")
        #expect(configuration.password == "p:ss/w")
        #expect(configuration.port == 15672)
        #expect(configuration.vhost == "prod/payments")
    }

    @Test func amqpsEnablesVerifiedTLSWithPort5671() throws {
        let configuration = try AMQPConfiguration(url: "amqps://u:p@rabbit.example.com/vh")
        #expect(configuration.port == 5671)
        let tls = try #require(configuration.tls)
        #expect(tls.verifyPeer)
        #expect(tls.verifyHostname)
        #expect(tls.caCertificatePath == nil)
        #expect(tls.clientCertificatePath == nil)
        #expect(tls.clientKeyPath == nil)
    }

    @Test func amqpsQueryOptionsSetTLSFiles() throws {
        let configuration = try AMQPConfiguration(
            url: "amqps://u:p@rabbit:5700/%2f?cacertfile=%2Fetc%2Fpaypipe%2Fca.pem&certfile=/c.pem&keyfile=/k.pem&heartbeat=5&connection_timeout=2500&connection_name=decrypt")
        let tls = try #require(configuration.tls)
        #expect(tls.caCertificatePath == "/etc/paypipe/ca.pem")
        #expect(tls.clientCertificatePath == "/c.pem")
        #expect(tls.clientKeyPath == "/k.pem")
        #expect(configuration.port == 5700)
        #expect(configuration.heartbeatSeconds == 5)
        #expect(configuration.connectTimeoutSeconds == 2.5)
        #expect(configuration.connectionName == "decrypt")
    }

    @Test func verifyNoneTurnsOffVerification() throws {
        let tls = try #require(try AMQPConfiguration(url: "amqps://h?verify=verify_none").tls)
        #expect(!tls.verifyPeer)
        #expect(!tls.verifyHostname)
    }

    @Test func ipv6Host() throws {
        let configuration = try AMQPConfiguration(url: "amqp://u:p@[::1]:5673/v")
        #expect(configuration.host == "::1")
        #expect(configuration.port == 5673)
        #expect(configuration.redactedURL == "amqp://u:***@[::1]:5673/v")
    }

    @Test func redactedURLAndDescriptionHideThePassword() throws {
        let configuration = try AMQPConfiguration(url: "amqps://svc:TopSecret99@rabbit:5671/%2f")
        #expect(configuration.redactedURL == "amqps://svc:***@rabbit:5671/%2F")
        #expect(!"\(configuration)".contains("TopSecret99"))
    }

    @Test(arguments: [
        "http://host/", "host:5672", "amqp://host:0/", "amqp://host:99999/", "amqp://host:abc/",
        "amqp://host/a/b", "amqp://host/%zz", "amqp://[::1/", "amqp://host/#frag",
        "amqp://host/?cacertfile=/ca.pem", "amqps://host/?certfile=/c.pem", "amqp://host/?heartbeat=-1",
        "amqps://host/?verify=maybe",
    ])
    func rejectsInvalidURLs(url: String) {
        #expect(throws: AMQPError.self) { try AMQPConfiguration(url: url) }
    }

    @Test func invalidURLErrorNeverEchoesThePassword() {
        do {
            _ = try AMQPConfiguration(url: "amqp://u:Hunter2@host:notaport/")
            Issue.record("expected an error")
        } catch {
            #expect(!error.description.contains("Hunter2"))
        }
    }
}
