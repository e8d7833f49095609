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
        try expectRedactedURLParsesBack(configuration)
    }

    /// The redacted URL parses back to the same configuration apart from the password.
    private func expectRedactedURLParsesBack(_ configuration: PostgresConfiguration) throws {
        var reparsed = try PostgresConfiguration(url: configuration.redactedURL)
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
        ("postgresql://db1:5432,db2:x/pay", "port"),
        ("postgresql://db1,db2,db3/pay?port=1,2", "2 ports given for 3 hosts"),
        ("postgresql://db/pay?sslmode=verify", "sslmode"),
        ("postgresql://db/pay?sslmode", "separator \"=\" in URI query parameter: \"sslmode\""),
        ("postgresql://db/pay?bogus=1", "invalid URI query parameter: \"bogus\""),
        ("postgresql://db/pay?connect_timeout=-1", "connect_timeout"),
        ("postgresql://db/pay?hostaddr=10.0.0.1", "'hostaddr' is not supported"),
        ("postgresql://db/pay?service=prod", "'service' is not supported"),
        ("postgresql://[::1/pay", "IPv6"),
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

    /// libpq's messages quote the offending text (a token, or the whole URL): the error must not carry the password.
    @Test(arguments: ["postgresql://app:abc%zzdef@db/pay", "postgresql://app:abczzdef@[::1/pay"])
    func libpqErrorsDoNotEchoThePassword(url: String) {
        let error = #expect(throws: PostgresError.self) { try PostgresConfiguration(url: url) }
        let text = "\(error.map { "\($0)" } ?? "")"
        #expect(text.contains("libpq"), "\(text)")
        #expect(!text.contains("abc") && !text.contains("zz"), "\(text)")
    }

    @Test func parsesMultiHostURLsAsLibpqDoes() throws {
        let configuration = try PostgresConfiguration(
            url: "postgresql://app:pw@db-a:5433,[::1],db-c:6000/pay?target_session_attrs=read-write")
        #expect(configuration.endpoints == [
            PostgresEndpoint(host: "db-a", port: 5433), PostgresEndpoint(host: "::1"), PostgresEndpoint(host: "db-c", port: 6000),
        ])
        #expect(configuration.host == "db-a")
        #expect(configuration.port == 5433)
        #expect(configuration.additionalParameters["target_session_attrs"] == "read-write")
        // One port applies to every host, as in libpq.
        let shared = try PostgresConfiguration(url: "postgresql:///pay?host=db-a,db-b&port=5544")
        #expect(shared.endpoints == [PostgresEndpoint(host: "db-a", port: 5544), PostgresEndpoint(host: "db-b", port: 5544)])
        // The display form lists every host and parses back to the same configuration.
        let redacted = configuration.redactedURL
        #expect(redacted.hasPrefix("postgresql://app:***@db-a:5433,[::1],db-c:6000/pay?"), "\(redacted)")
        try expectRedactedURLParsesBack(configuration)
    }

    /// URLs PayPipe has always accepted keep their meaning: an unencoded `@` in the password (the last `@` ends the
    /// user info; libpq alone would end it at the first) and an upper-case scheme (libpq matches it case-sensitively).
    @Test func keepsTheMeaningOfURLsAcceptedBefore() throws {
        let configuration = try PostgresConfiguration(url: "POSTGRESQL://app:p@ss@w0rd@db:5432/pay")
        #expect(configuration.user == "app")
        #expect(configuration.password == "p@ss@w0rd")
        #expect(configuration.host == "db")
        #expect(configuration.database == "pay")
    }

    /// libpq keeps the last of repeated query keys; what the security policy checks is that effective value.
    @Test func repeatedKeysKeepTheLastValueAsLibpqDoes() throws {
        let configuration = try PostgresConfiguration(url: "postgresql://db/pay?sslmode=verify-full&sslmode=disable")
        #expect(configuration.sslMode == .disable)
    }
}
