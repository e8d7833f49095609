import Foundation

/// The TLS endpoints `scripts/test` enables (`PAYPIPE_TLS=1 scripts/services start`): an amqps listener and
/// PostgreSQL with `ssl = on`, a server certificate for localhost/127.0.0.1 from the local CA in `var/tls`, and
/// the non-default `paypipe` user. Missing variables are a test failure, never a skip: a TLS suite that quietly
/// skips would hide a broken TLS setup in CI.
extension TestServices {
    static func required(_ variable: String) throws -> String {
        guard let value = environment[variable], !value.isEmpty else {
            throw TestFailure("\(variable) is not set: run the tests through scripts/test, which starts the services in TLS mode")
        }
        return value
    }

    /// `amqps://paypipe:…@localhost:<amqps port>/%2f?cacertfile=<var/tls/ca.pem>`.
    static func amqpsURL() throws -> String { try required("PAYPIPE_TEST_AMQPS_URL") }

    /// `postgresql://paypipe:…@localhost:<port>/paypipe_test?sslmode=verify-full&sslrootcert=<var/tls/ca.pem>`.
    static func databaseTLSURL() throws -> String { try required("PAYPIPE_TEST_DATABASE_TLS_URL") }

    /// The folder with `ca.pem` (the CA that signed the services' certificates).
    static func tlsDirectory() throws -> String { try required("PAYPIPE_TEST_TLS_DIR") }
}
