/// libpq's `sslmode`: how hard the client insists on TLS and on verifying the server.
///
/// Production configurations should use `.verifyFull` with `sslrootcert`, which checks both the chain and the
/// host name; anything weaker lets an on-path attacker read payment data.
public enum PostgresSSLMode: String, Sendable, CaseIterable {
    case disable
    case allow
    case prefer
    case require
    case verifyCA = "verify-ca"
    case verifyFull = "verify-full"
}
