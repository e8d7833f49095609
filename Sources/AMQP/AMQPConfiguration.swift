import Foundation

/// Where and how to connect to RabbitMQ.
///
/// Parsed from an `amqp://` / `amqps://` URL as described in RabbitMQ's URI spec
/// (`amqp://user:password@host:port/vhost?heartbeat=10`). The vhost is percent-decoded, so the
/// default vhost is written `%2f`; an absent or empty vhost also means `/`.
/// `description` is the redacted URL, so interpolating a configuration into a log line is safe.
///
/// A cluster is given as a comma-separated list of URLs (`amqp://u:p@rabbit-1:5672/%2f,amqp://u:p@rabbit-2:5672/%2f`),
/// as RabbitMQ's clients take a list of addresses: every connection (publisher, consumer, tool) tries the nodes in a
/// fresh random order and takes the first that accepts it, so workers spread over the cluster and a lost node costs
/// one reconnect.
public struct AMQPConfiguration: Sendable, Equatable, CustomStringConvertible {
    public var user: String
    public var password: String
    /// Every node of the cluster (one for a single broker); never empty.
    public var nodes: [AMQPEndpoint]
    /// The first node's host. Setting it replaces the first node's host.
    public var host: String {
        get { nodes[0].host }
        set { nodes[0].host = newValue }
    }
    /// The first node's port. Setting it replaces the first node's port.
    public var port: Int {
        get { nodes[0].port }
        set { nodes[0].port = newValue }
    }
    public var vhost: String
    /// Requested heartbeat timeout in seconds (the broker may negotiate a lower one); 0 disables heartbeats.
    public var heartbeatSeconds: Int = 10
    /// Bounds TCP connect, TLS handshake and AMQP login.
    public var connectTimeoutSeconds: Double = 10
    /// Bounds each synchronous AMQP RPC (declare, qos, consume, ...). rabbitmq-c closes the
    /// connection when it expires; heartbeats are still serviced while waiting.
    public var rpcTimeoutSeconds: Double = 30
    /// Shown as `connection_name` in the management UI and `rabbitmqctl list_connections`.
    public var connectionName: String = "paypipe"
    /// Non-nil for `amqps://`.
    public var tls: AMQPTLSOptions?
    /// Delay policy between reconnect attempts of `AMQPPublisher` / `AMQPConsumer`.
    public var reconnectBackoff = AMQPBackoff()

    public init(
        host: String = "localhost",
        port: Int? = nil,
        user: String = "guest",
        password: String = "guest",
        vhost: String = "/",
        tls: AMQPTLSOptions? = nil
    ) {
        self.nodes = [AMQPEndpoint(host: host, port: port ?? (tls == nil ? 5672 : 5671))]
        self.user = user
        self.password = password
        self.vhost = vhost
        self.tls = tls
    }

    /// Parses an AMQP URI, or a comma-separated list of them (one per cluster node). Supported query parameters:
    /// `heartbeat` (s), `connection_timeout` (ms), `connection_name`, and for `amqps` `cacertfile`, `certfile`,
    /// `keyfile`, `verify` (`verify_peer` | `verify_none`). Other parameters are ignored, like other RabbitMQ clients do.
    ///
    /// The URLs of a list must differ only in host and port: one user, vhost and set of options for the cluster.
    /// A list splits only where a comma is followed by `amqp://` or `amqps://`, so a comma inside a password
    /// keeps its meaning.
    public init(url: String) throws(AMQPError) {
        let urls = Self.splitList(url)
        try self.init(nodeURL: urls[0])
        for other in urls.dropFirst() {
            var parsed = try AMQPConfiguration(nodeURL: other)
            let node = parsed.nodes[0]
            parsed.nodes = nodes
            guard parsed == self else {
                throw .invalidURL("the URLs of a list must differ only in host and port (one scheme, user, password, vhost and set of options)")
            }
            guard !nodes.contains(node) else { throw .invalidURL("node \(node.host):\(node.port) is listed twice") }
            nodes.append(node)
        }
    }

    /// `url` (one URL or a cluster list) with `password` written, percent-encoded, into every URL's user info: for a
    /// password kept apart from the URL (a secret file). Each URL must name its user and carry no password of its own.
    public static func url(_ url: String, settingPassword password: String) throws(AMQPError) -> String {
        var urls: [String] = []
        for node in splitList(url) {
            guard let schemeEnd = node.range(of: "://") else { throw .invalidURL("missing scheme (expected amqp:// or amqps://)") }
            let rest = node[schemeEnd.upperBound...]
            let authority = rest[..<(rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex)]
            guard let at = authority.lastIndex(of: "@"), at > authority.startIndex else {
                throw .invalidURL("names no user for the separate password (write amqps://USER@host/vhost)")
            }
            guard !authority[..<at].contains(":") else {
                throw .invalidURL("carries a password of its own as well as the separate one: give it in one place only")
            }
            urls.append(String(node[..<at]) + ":" + encode(password) + String(node[at...]))
        }
        let joined = urls.joined(separator: ",")
        _ = try AMQPConfiguration(url: joined)
        return joined
    }

    /// The list split where a comma starts another `amqp://` / `amqps://` URL.
    static func splitList(_ text: String) -> [String] {
        var urls: [String] = []
        var rest = Substring(text)
        while let comma = rest.indices.first(where: { index in
            rest[index] == "," && ["amqp://", "amqps://"].contains { rest[rest.index(after: index)...].lowercased().hasPrefix($0) }
        }) {
            urls.append(String(rest[..<comma]))
            rest = rest[rest.index(after: comma)...]
        }
        urls.append(String(rest))
        return urls
    }

    private init(nodeURL url: String) throws(AMQPError) {
        guard let schemeEnd = url.range(of: "://") else {
            throw .invalidURL("missing scheme (expected amqp:// or amqps://)")
        }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "amqp" || scheme == "amqps" else {
            throw .invalidURL("unsupported scheme '\(scheme)' (expected amqp or amqps)")
        }
        var rest = url[schemeEnd.upperBound...]
        if rest.contains("#") { throw .invalidURL("fragments are not allowed") }

        var query: Substring = ""
        if let questionMark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: questionMark)...]
            rest = rest[..<questionMark]
        }
        var authority = rest
        var path: Substring?
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            path = rest[rest.index(after: slash)...]
        }

        var user = "guest"
        var password = "guest"
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                user = try Self.decode(userInfo[..<colon], what: "user name")
                password = try Self.decode(userInfo[userInfo.index(after: colon)...], what: "password")
            } else {
                user = try Self.decode(userInfo, what: "user name")
                password = ""
            }
        }

        let isTLS = scheme == "amqps"
        let (host, port) = try Self.parseHostPort(hostPort, defaultPort: isTLS ? 5671 : 5672)
        var vhost = "/"
        if let path, !path.isEmpty {
            if path.contains("/") { throw .invalidURL("the vhost must percent-encode '/' as %2f") }
            vhost = try Self.decode(path, what: "vhost")
        }

        self.init(host: host, port: port, user: user, password: password, vhost: vhost,
                  tls: isTLS ? AMQPTLSOptions() : nil)
        try applyQuery(query)
    }

    /// The URL with the password replaced by `***`, for logs.
    public var redactedURL: String {
        let scheme = tls == nil ? "amqp" : "amqps"
        let credentials = password.isEmpty ? Self.encode(user) : "\(Self.encode(user)):***"
        return nodes.map { node in
            let hostPart = node.host.contains(":") ? "[\(node.host)]" : node.host
            return "\(scheme)://\(credentials)@\(hostPart):\(node.port)/\(Self.encode(vhost))"
        }.joined(separator: ",")
    }

    public var description: String { redactedURL }

    // MARK: - Parsing helpers

    private mutating func applyQuery(_ query: Substring) throws(AMQPError) {
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = try Self.decode(parts[0], what: "query key")
            let value = parts.count > 1 ? try Self.decode(parts[1], what: "value of '\(key)'") : ""
            switch key {
            case "heartbeat":
                guard let seconds = Int(value), seconds >= 0 else {
                    throw .invalidURL("heartbeat must be a non-negative number of seconds")
                }
                heartbeatSeconds = seconds
            case "connection_timeout":
                guard let milliseconds = Double(value), milliseconds > 0 else {
                    throw .invalidURL("connection_timeout must be a positive number of milliseconds")
                }
                connectTimeoutSeconds = milliseconds / 1000
            case "connection_name":
                connectionName = value
            case "cacertfile", "certfile", "keyfile", "verify":
                guard var options = tls else { throw .invalidURL("'\(key)' requires the amqps scheme") }
                switch key {
                case "cacertfile": options.caCertificatePath = value
                case "certfile": options.clientCertificatePath = value
                case "keyfile": options.clientKeyPath = value
                default:
                    switch value {
                    case "verify_peer": options.verifyPeer = true; options.verifyHostname = true
                    case "verify_none": options.verifyPeer = false; options.verifyHostname = false
                    default: throw .invalidURL("verify must be verify_peer or verify_none")
                    }
                }
                tls = options
            default:
                continue
            }
        }
        if let tls, (tls.clientCertificatePath == nil) != (tls.clientKeyPath == nil) {
            throw .invalidURL("certfile and keyfile must be given together")
        }
    }

    private static func parseHostPort(_ text: Substring, defaultPort: Int) throws(AMQPError) -> (String, Int) {
        var hostText = text
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw .invalidURL("unterminated IPv6 address") }
            hostText = text[text.index(after: text.startIndex)..<close]
            let afterBracket = text[text.index(after: close)...]
            if !afterBracket.isEmpty {
                guard afterBracket.hasPrefix(":") else { throw .invalidURL("unexpected text after IPv6 address") }
                portText = afterBracket.dropFirst()
            }
        } else if let colon = text.firstIndex(of: ":") {
            hostText = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        let host = hostText.isEmpty ? "localhost" : try decode(hostText, what: "host")
        guard let portText else { return (host, defaultPort) }
        guard let port = Int(portText), (1...65535).contains(port) else {
            throw .invalidURL("port must be a number between 1 and 65535")
        }
        return (host, port)
    }

    private static func decode(_ text: Substring, what: String) throws(AMQPError) -> String {
        guard let decoded = String(text).removingPercentEncoding else {
            throw .invalidURL("malformed percent-encoding in the \(what)")
        }
        return decoded
    }

    private static func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

/// One broker node of a configuration.
public struct AMQPEndpoint: Sendable, Equatable, Hashable {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }
}
