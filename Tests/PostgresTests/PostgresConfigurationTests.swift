import Postgres
import Testing

@Suite("PostgresConfiguration URL parsing")
struct PostgresConfigurationTests {
    @Test func parsesAllComponents() throws {
        let configuration = try PostgresConfiguration(
            url: "postgresql://pay%40pipe:s3cr%2Ft%3A@db.example.com:6432/pay_db?sslmode=verify-full"
                + "&sslrootcert=%2Fetc%2Fpaypipe%2Fca.pem&application_name=paypipe-auth&connect_timeout=9")
        #expect(configuration.user == "pay@pipe")
        #expect(configuration.password == "s3cr/t:")
        #expect(configuration.host == "db.example.com")
        #expect(configuration.port == 6432)
        #expect(configuration.database == "pay_db")
        #expect(configuration.sslMode == .verifyFull)
        #expect(configuration.sslRootCert == "/etc/paypipe/ca.pem")
        #expect(configuration.applicationName == "paypipe-auth")
        #expect(configuration.connectTimeoutSeconds == 9)
    }

    @Test func appliesDefaults() throws {
        let configuration = try PostgresConfiguration(url: "postgres://localhost")
        #expect(configuration.host == "localhost")
        #expect(configuration.port == nil)
        #expect(configuration.user == nil)
        #expect(configuration.database == nil)
        #expect(configuration.sslMode == nil)
        #expect(configuration.connectTimeoutSeconds == 5)
        #expect(configuration.applicationName == "paypipe")
    }

    @Test func parsesIPv6AndSocketHosts() throws {
        let ipv6 = try PostgresConfiguration(url: "postgresql://[::1]:5433/db")
        #expect(ipv6.host == "::1")
        #expect(ipv6.port == 5433)
        let socket = try PostgresConfiguration(url: "postgresql://%2Fvar%2Frun%2Fpostgresql/db")
        #expect(socket.host == "/var/run/postgresql")
        let queryHost = try PostgresConfiguration(url: "postgresql:///db?host=/tmp&port=5544")
        #expect(queryHost.host == "/tmp")
        #expect(queryHost.port == 5544)
    }

    @Test func redactsThePassword() throws {
        let configuration = try PostgresConfiguration(
            url: "postgresql://app:hunter2secret@db:5432/pay?sslmode=require")
        let redacted = configuration.redactedURL
        #expect(!redacted.contains("hunter2secret"))
        #expect(redacted.hasPrefix("postgresql://app:***@db:5432/pay?sslmode=require"))
        #expect(!"\(configuration)".contains("hunter2secret"))
        #expect(!String(reflecting: configuration).contains("hunter2secret"))
        var dumped = ""
        dump(configuration, to: &dumped)
        #expect(!dumped.contains("hunter2secret"))
        // The redacted URL parses back to the same configuration apart from the password.
        var reparsed = try PostgresConfiguration(url: redacted)
        reparsed.password = configuration.password
        #expect(reparsed == configuration)
    }

    @Test func passwordInQueryIsRedactedToo() throws {
        let configuration = try PostgresConfiguration(url: "postgresql://db/pay?user=app&password=topsecret")
        #expect(configuration.password == "topsecret")
        #expect(!configuration.redactedURL.contains("topsecret"))
    }

    @Test(arguments: [
        ("mysql://db/pay", "scheme"),
        ("postgresql://db:0/pay", "port"),
        ("postgresql://db:99999/pay", "port"),
        ("postgresql://db:abc/pay", "port"),
        ("postgresql://db/pay?sslmode=verify", "sslmode"),
        ("postgresql://db/pay?sslmode", "has no value"),
        ("postgresql://db/pay?bogus=1", "unknown connection parameter 'bogus'"),
        ("postgresql://db/pay?connect_timeout=-1", "connect_timeout"),
        ("postgresql://db/pay?sslmode=require&sslmode=disable", "more than once"),
        ("postgresql://db1,db2/pay", "multiple hosts"),
        ("postgresql://[::1/pay", "IPv6"),
        ("postgresql://db/pay/extra", "database name"),
        ("postgresql://db/pay?client_encoding=LATIN1", "client_encoding"),
        ("postgresql://db/pay?sslrootcert=", "sslrootcert"),
    ])
    func rejectsInvalidURLs(url: String, expectedFragment: String) {
        let error = #expect(throws: PostgresError.self) { try PostgresConfiguration(url: url) }
        guard case .invalidURL(let reason) = error else {
            Issue.record("expected .invalidURL, got \(String(describing: error))")
            return
        }
        #expect(reason.contains(expectedFragment), "\(reason)")
    }

    @Test func invalidPercentEncodingInPasswordNamesThePasswordButNotItsText() {
        let error = #expect(throws: PostgresError.self) {
            try PostgresConfiguration(url: "postgresql://app:abc%zzdef@db/pay")
        }
        let text = "\(error.map { "\($0)" } ?? "")"
        #expect(text.contains("password"))
        #expect(!text.contains("abc") && !text.contains("zz"))
    }
}
