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
    /// Host name, IP address, or the directory of a Unix-domain socket; nil uses libpq's default socket.
    public var host: String?
    public var port: Int?
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

    /// Parses `postgresql://[user[:password]@][host][:port][/database][?key=value&…]` (or `postgres://`).
    ///
    /// Components are percent-decoded (`%2F` in the host for a socket directory, `%40` for `@` in a password).
    /// Recognised query keys: `sslmode`, `sslrootcert`, `sslcert`, `sslkey`, `application_name`,
    /// `connect_timeout`, `host`, `port`, `user`, `password`, `dbname`, and the libpq keys passed through unchanged:
    /// `options`, `sslcrl`, `sslsni`, `sslcompression`, `keepalives`, `keepalives_idle`, `keepalives_interval`,
    /// `keepalives_count`, `tcp_user_timeout`, `target_session_attrs`, `channel_binding`, `gssencmode`.
    /// Unknown keys are rejected, as libpq would; `client_encoding` is rejected because PayPipe fixes it.
    public init(url: String) throws(PostgresError) {
        self = try PostgresURLParser.parse(url)
    }

    /// A configuration for a host without a URL, e.g. assembled from separate environment variables.
    public init(host: String? = nil, port: Int? = nil, user: String? = nil, password: String? = nil,
                database: String? = nil, sslMode: PostgresSSLMode? = nil, sslRootCert: String? = nil)
    {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.sslMode = sslMode
        self.sslRootCert = sslRootCert
    }

    /// The URL with the password replaced by `***`: fit for logs.
    public var redactedURL: String {
        typealias Encoding = PostgresURLParser
        var text = "postgresql://"
        if let user {
            text += Encoding.percentEncode(user) + (password == nil ? "" : ":***") + "@"
        } else if password != nil {
            text += ":***@"
        }
        if let host {
            text += host.contains(":") && !host.hasPrefix("/") ? "[\(host)]" : Encoding.percentEncode(host)
        }
        if let port { text += ":\(port)" }
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
        add("host", host)
        add("port", port.map(String.init))
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
}
