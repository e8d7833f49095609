import Foundation

/// Where and how to connect to RabbitMQ.
///
/// Parsed from an `amqp://` / `amqps://` URL as described in RabbitMQ's URI spec
/// (`amqp://user:password@host:port/vhost?heartbeat=10`). The vhost is percent-decoded, so the
/// default vhost is written `%2f`; an absent or empty vhost also means `/`.
/// `description` is the redacted URL, so interpolating a configuration into a log line is safe.
public struct AMQPConfiguration: Sendable, Equatable, CustomStringConvertible {
    public var user: String
    public var password: String
    public var host: String
    public var port: Int
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
        self.host = host
        self.port = port ?? (tls == nil ? 5672 : 5671)
        self.user = user
        self.password = password
        self.vhost = vhost
        self.tls = tls
    }

    /// Parses an AMQP URI. Supported query parameters: `heartbeat` (s), `connection_timeout` (ms),
    /// `connection_name`, and for `amqps` `cacertfile`, `certfile`, `keyfile`, `verify`
    /// (`verify_peer` | `verify_none`). Other parameters are ignored, like other RabbitMQ clients do.
    public init(url: String) throws(AMQPError) {
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
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(credentials)@\(hostPart):\(port)/\(Self.encode(vhost))"
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
