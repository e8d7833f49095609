import AMQP
import Postgres

/// What a worker outside sandbox demands of its broker and database connections, checked at start-up so a
/// deployment that forgot a variable fails loudly instead of quietly using a developer's setup.
///
/// Rules (all skipped when `PAYPIPE_ENV=sandbox`):
/// 1. `PAYPIPE_AMQP_URL` and `PAYPIPE_DATABASE_URL` must be set: the built-in defaults (local guest broker,
///    password-less `postgres` superuser) are sandbox conveniences, never a production fallback.
/// 2. The broker user must not be `guest` (RabbitMQ's built-in account, whose password everybody knows) and the
///    URL must carry a password.
/// 3. The database connection must carry a credential: a password (in the URL, or `PGPASSWORD`/`PGPASSFILE`) or a
///    client certificate (`sslcert`); and a user must be named. Otherwise it only works against a server that
///    trusts the connection (`trust`/`peer` authentication), as the local sandbox does.
/// 4. Transport: to a host other than loopback (or a Unix socket) — any host of a multi-host URL or list — the broker URL must be `amqps://` with peer
///    verification and the database URL `sslmode=verify-full` (chain *and* host name checked; `verify-ca` would
///    accept any certificate the CA ever issued). `amqps://…?verify=verify_none` is refused everywhere.
///    `PAYPIPE_ALLOW_INSECURE_TRANSPORT=1` lifts rule 4 only, for networks that encrypt underneath (a service
///    mesh's mutual TLS sidecar); the worker then logs `insecure_transport_allowed` at start-up.
/// 5. Client private keys named in the URLs (`keyfile=`, `sslkey=`) must be private files (``FilePermissions``).
///
/// A password given in a file (``PasswordFiles``: `PAYPIPE_AMQP_PASSWORD_FILE`, `PAYPIPE_DATABASE_PASSWORD_FILE`) counts as
/// the URL's own for rules 2 and 3.
///
/// Errors name the variable and the rule, never the URL (which may hold a password).
public enum ConnectionSecurityPolicy {
    public static let allowInsecureTransportVariable = "PAYPIPE_ALLOW_INSECURE_TRANSPORT"
    static let amqpVariable = "PAYPIPE_AMQP_URL"
    static let databaseVariable = "PAYPIPE_DATABASE_URL"

    /// Enforces the rules for `deployment`. Returns whether rule 4 was lifted (for the start-up warning).
    @discardableResult
    public static func enforce(_ reader: EnvironmentReader, deployment: DeploymentEnvironment) throws(ConfigurationError) -> Bool {
        guard deployment != .sandbox else { return false }
        let allowInsecure = try reader.read(RuntimeSettings.allowInsecureTransport)
        try checkBroker(try PasswordFiles.amqpURL(try required(amqpVariable, reader), reader, deployment: deployment), allowInsecure: allowInsecure)
        try checkDatabase(try PasswordFiles.databaseURL(try required(databaseVariable, reader), reader, deployment: deployment),
                          reader: reader, allowInsecure: allowInsecure)
        return allowInsecure
    }

    /// `PAYPIPE_DATABASE_URL` (with `PAYPIPE_DATABASE_PASSWORD_FILE`'s password, if set) for tools that need only the
    /// database (`paypipe migrate`, `merchant apply`): the sandbox default in sandbox, else the variable checked by
    /// rules 1, 3, 4 and 5.
    public static func databaseURL(_ reader: EnvironmentReader, deployment: DeploymentEnvironment) throws(ConfigurationError) -> String {
        guard deployment != .sandbox else {
            return try PasswordFiles.databaseURL(reader.string(databaseVariable, default: WorkerConfiguration.defaultDatabaseURL), reader, deployment: deployment)
        }
        let url = try PasswordFiles.databaseURL(try required(databaseVariable, reader), reader, deployment: deployment)
        try checkDatabase(url, reader: reader, allowInsecure: try reader.read(RuntimeSettings.allowInsecureTransport))
        return url
    }

    private static func required(_ variable: String, _ reader: EnvironmentReader) throws(ConfigurationError) -> String {
        guard let value = reader.raw(variable) else {
            throw ConfigurationError(variable: variable, problem: "must be set outside PAYPIPE_ENV=sandbox (there is no default outside sandbox)")
        }
        return value
    }

    static func checkBroker(_ url: String, allowInsecure: Bool) throws(ConfigurationError) {
        let configuration: AMQPConfiguration
        do {
            configuration = try AMQPConfiguration(url: url)
        } catch {
            throw ConfigurationError(variable: amqpVariable, problem: "\(error)")
        }
        guard configuration.user != "guest" else {
            throw ConfigurationError(variable: amqpVariable, problem: "uses RabbitMQ's default `guest` account (or names no user); create a PayPipe user with its own password")
        }
        guard !configuration.password.isEmpty else {
            throw ConfigurationError(variable: amqpVariable, problem: "carries no password for user \(configuration.user)")
        }
        if let tls = configuration.tls {
            guard tls.verifyPeer || allowInsecure else {
                throw ConfigurationError(variable: amqpVariable, problem: "verify=verify_none disables broker certificate verification; give the broker's CA with cacertfile=…")
            }
            if let key = tls.clientKeyPath {
                try FilePermissions.requirePrivate(key, variable: amqpVariable + " keyfile")
            }
        } else if !allowInsecure, let remote = configuration.nodes.first(where: { !isLocal($0.host) }) {
            // Every node of a cluster list: a connection may go to any of them.
            throw ConfigurationError(
                variable: amqpVariable,
                problem: "plain amqp:// to \(remote.host), which is not loopback; use amqps://…?cacertfile=… (or set \(allowInsecureTransportVariable)=1 if the network encrypts underneath)")
        }
    }

    static func checkDatabase(_ url: String, reader: EnvironmentReader, allowInsecure: Bool) throws(ConfigurationError) {
        let configuration: PostgresConfiguration
        do {
            configuration = try PostgresConfiguration(url: url)
        } catch {
            throw ConfigurationError(variable: databaseVariable, problem: "\(error)")
        }
        guard configuration.user != nil else {
            throw ConfigurationError(variable: databaseVariable, problem: "names no user (libpq would use the operating-system user name)")
        }
        let hasPassword = !(configuration.password ?? "").isEmpty || reader.raw("PGPASSWORD") != nil || reader.raw("PGPASSFILE") != nil
        guard hasPassword || configuration.sslCert != nil else {
            throw ConfigurationError(
                variable: databaseVariable,
                problem: "carries no credential (password, PGPASSWORD/PGPASSFILE, or a client certificate with sslcert=/sslkey=), so it only works against trust authentication")
        }
        if let key = configuration.sslKey {
            try FilePermissions.requirePrivate(key, variable: databaseVariable + " sslkey")
        }
        let mode = configuration.sslMode ?? reader.raw("PGSSLMODE").flatMap(PostgresSSLMode.init(rawValue:))
        guard mode != .verifyFull, !allowInsecure else { return }
        // Every host of a multi-host URL: libpq may connect to any of them (after a failover, to the last one). libpq
        // reads PGHOST (itself a list) only when the URL names no host at all; an empty entry is the local socket.
        let named = configuration.endpoints.compactMap(\.host)
        let hosts = named.isEmpty ? (reader.raw("PGHOST")?.split(separator: ",").map(String.init) ?? []) : named
        for host in hosts {
            if !isLocal(host) {
                throw ConfigurationError(
                    variable: databaseVariable,
                    problem: "sslmode is \(mode?.rawValue ?? "prefer (the default)") for \(host), which is not loopback; use sslmode=verify-full&sslrootcert=… (or set \(allowInsecureTransportVariable)=1 if the network encrypts underneath)")
            }
        }
    }

    /// Loopback names and addresses, and Unix-socket directories: traffic that never leaves the host.
    static func isLocal(_ host: String) -> Bool {
        if host.hasPrefix("/") || host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
