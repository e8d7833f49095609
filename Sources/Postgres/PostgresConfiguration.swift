/// Where and how to connect, parsed from a `postgresql://` URL.
///
/// The URL is validated up front so that a typo fails at start-up with a message naming the bad part rather than
/// as an opaque libpq error at the first connect. The password is kept for connecting but never printed:
/// `description`, `redactedURL` and `dump` all mask it.
///
/// Session settings that decoding relies on are not configurable: every connection runs with `TimeZone=UTC`,
/// `DateStyle=ISO`, `bytea_output=hex` and `client_encoding=UTF8`.
public struct PostgresConfiguration: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// Every host libpq may try, in order (a multi-host URL `postgresql://h1:5432,h2:5432/db` lists several; libpq
    /// takes the first that accepts the connection and satisfies `target_session_attrs`). Never empty.
    public var endpoints: [PostgresEndpoint] = [PostgresEndpoint()]
    /// Host name, IP address, or the directory of a Unix-domain socket, of the first endpoint; nil uses libpq's
    /// default socket. Setting it replaces the first endpoint's host.
    public var host: String? {
        get { endpoints.first?.host }
        set { updateFirstEndpoint { $0.host = newValue } }
    }
    /// The first endpoint's port (nil: libpq's default). Setting it replaces the first endpoint's port.
    public var port: Int? {
        get { endpoints.first?.port }
        set { updateFirstEndpoint { $0.port = newValue } }
    }
    public var user: String?
    public var password: String?
    /// nil lets the server default to the user name.
    public var database: String?
    /// nil uses libpq's default (`prefer`).
    public var sslMode: PostgresSSLMode?
    public var sslRootCert: String?
    public var sslCert: String?
    public var sslKey: String?
    /// Seconds libpq waits for each connection attempt; 0 waits forever (libpq treats 1 as 2).
    public var connectTimeoutSeconds: Int = 5
    /// Shown in `pg_stat_activity`, which is how an operator tells PayPipe's workers apart.
    public var applicationName: String = "paypipe"
    /// How many distinct statements a connection prepares and keeps; statements beyond this run unprepared.
    public var preparedStatementCacheCapacity: Int = 256
    /// Other libpq keywords given in the URL (`options`, `keepalives*`, `target_session_attrs`, …).
    public var additionalParameters: [String: String] = [:]

    /// Parses `postgresql://[user[:password]@][host][:port][,host[:port]…][/database][?key=value&…]` (or
    /// `postgres://`) with libpq's own `PQconninfoParse`, so it means exactly what it means to `psql`.
    ///
    /// Components are percent-decoded (`%2F` in the host for a socket directory, `%40` for `@` in a password; an
    /// unencoded `@` in the password is still accepted: the last `@` ends the user info). Several comma-separated
    /// hosts are tried in order; with `target_session_attrs=read-write` libpq skips servers in recovery (a standby),
    /// which is how a worker finds the new primary after a failover. Recognised query keys: `sslmode`, `sslrootcert`, `sslcert`, `sslkey`, `application_name`,
    /// `connect_timeout`, `host`, `port`, `user`, `password`, `dbname`, and the libpq keys passed through unchanged:
    /// `options`, `sslcrl`, `sslsni`, `sslcompression`, `keepalives`, `keepalives_idle`, `keepalives_interval`,
    /// `keepalives_count`, `tcp_user_timeout`, `target_session_attrs`, `channel_binding`, `gssencmode`.
    /// Unknown keys are rejected, as libpq would; `client_encoding` is rejected because PayPipe fixes it.
    public init(url: String) throws(PostgresError) {
        self = try PostgresConninfo.parse(url)
    }

    /// `url` with `password` added as its `password` parameter (percent-encoded): for a password kept apart from the
    /// URL (a secret file). The URL must carry no password of its own.
    public static func url(_ url: String, settingPassword password: String) throws(PostgresError) -> String {
        guard try PostgresConfiguration(url: url).password == nil else {
            throw .invalidURL("carries a password of its own as well as the separate one: give it in one place only")
        }
        let joined = url + (url.contains("?") ? "&" : "?") + "password=" + PostgresConninfo.percentEncode(password)
        _ = try PostgresConfiguration(url: joined)
        return joined
    }

    /// A configuration for a host without a URL, e.g. assembled from separate environment variables.
    public init(host: String? = nil, port: Int? = nil, user: String? = nil, password: String? = nil,
                database: String? = nil, sslMode: PostgresSSLMode? = nil, sslRootCert: String? = nil)
    {
        self.endpoints = [PostgresEndpoint(host: host, port: port)]
        self.user = user
        self.password = password
        self.database = database
        self.sslMode = sslMode
        self.sslRootCert = sslRootCert
    }

    /// The URL with the password replaced by `***`: fit for logs. It parses back to this configuration (apart from
    /// the password).
    public var redactedURL: String {
        typealias Encoding = PostgresConninfo
        var text = "postgresql://"
        if let user {
            text += Encoding.percentEncode(user) + (password == nil ? "" : ":***") + "@"
        } else if password != nil {
            text += ":***@"
        }
        text += endpoints.map { endpoint in
            var part = endpoint.host.map { host in
                host.contains(":") && !host.hasPrefix("/") ? "[\(host)]" : Encoding.percentEncode(host)
            } ?? ""
            if let port = endpoint.port { part += ":\(port)" }
            return part
        }.joined(separator: ",")
        if let database { text += "/" + Encoding.percentEncode(database) }
        var query: [(String, String)] = []
        if let sslMode { query.append(("sslmode", sslMode.rawValue)) }
        if let sslRootCert { query.append(("sslrootcert", sslRootCert)) }
        if let sslCert { query.append(("sslcert", sslCert)) }
        if let sslKey { query.append(("sslkey", sslKey)) }
        query.append(("application_name", applicationName))
        query.append(("connect_timeout", String(connectTimeoutSeconds)))
        for key in additionalParameters.keys.sorted() {
            query.append((key, additionalParameters[key] ?? ""))
        }
        return text + "?" + query.map { "\($0.0)=\(Encoding.percentEncode($0.1))" }.joined(separator: "&")
    }

    public var description: String { redactedURL }
    public var debugDescription: String { "PostgresConfiguration(\(redactedURL))" }
    public var customMirror: Mirror { Mirror(self, children: ["url": redactedURL]) }

    /// Session settings PayPipe depends on: timestamps are read as UTC ISO text and bytea as hex.
    static let sessionOptions = "-c TimeZone=UTC -c DateStyle=ISO -c bytea_output=hex"

    /// The libpq keyword/value pairs for `PQconnectdbParams`, in order. Later pairs win, so the fixed session
    /// settings come last.
    var libpqParameters: [(keyword: String, value: String)] {
        var parameters: [(keyword: String, value: String)] = []
        func add(_ keyword: String, _ value: String?) {
            if let value { parameters.append((keyword, value)) }
        }
        // libpq's list form: one entry per endpoint, empty for its default.
        if endpoints.contains(where: { $0.host != nil }) {
            add("host", endpoints.map { $0.host ?? "" }.joined(separator: ","))
        }
        if endpoints.contains(where: { $0.port != nil }) {
            add("port", endpoints.map { $0.port.map(String.init) ?? "" }.joined(separator: ","))
        }
        add("user", user)
        add("password", password)
        add("dbname", database)
        add("sslmode", sslMode?.rawValue)
        add("sslrootcert", sslRootCert)
        add("sslcert", sslCert)
        add("sslkey", sslKey)
        for key in additionalParameters.keys.sorted() where key != "options" {
            add(key, additionalParameters[key])
        }
        add("application_name", applicationName)
        add("connect_timeout", String(connectTimeoutSeconds))
        add("client_encoding", "UTF8")
        let userOptions = additionalParameters["options"].map { $0 + " " } ?? ""
        add("options", userOptions + Self.sessionOptions)
        return parameters
    }

    private mutating func updateFirstEndpoint(_ change: (inout PostgresEndpoint) -> Void) {
        if endpoints.isEmpty { endpoints = [PostgresEndpoint()] }
        change(&endpoints[0])
    }
}

/// One server of a (multi-host) configuration: libpq tries them in order.
public struct PostgresEndpoint: Sendable, Equatable {
    /// Host name, IP address, or the directory of a Unix-domain socket; nil is libpq's default socket directory.
    public var host: String?
    /// nil is libpq's default (5432, or `PGPORT`).
    public var port: Int?

    public init(host: String? = nil, port: Int? = nil) {
        self.host = host
        self.port = port
    }
}

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
