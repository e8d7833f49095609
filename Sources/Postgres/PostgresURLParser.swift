/// Parses and validates `postgresql://` URLs into a `PostgresConfiguration`.
///
/// Written here rather than delegated to `PQconninfoParse` because libpq's messages quote the offending text,
/// which for a URL can be part of the password. Every error below names the component and never its value
/// (except for enumerations such as `sslmode`, whose values are not secret).
enum PostgresURLParser {
    /// libpq keywords accepted in the query string and passed through unchanged.
    static let passThroughKeys: Set<String> = [
        "options", "sslcrl", "sslsni", "sslcompression", "keepalives", "keepalives_idle", "keepalives_interval",
        "keepalives_count", "tcp_user_timeout", "target_session_attrs", "channel_binding", "gssencmode",
    ]

    static func parse(_ url: String) throws(PostgresError) -> PostgresConfiguration {
        guard let rest = stripScheme(url) else {
            throw .invalidURL("the scheme must be postgresql:// or postgres://")
        }
        guard !rest.contains("#") else {
            throw .invalidURL("fragments ('#') are not allowed; percent-encode '#' as %23")
        }
        var configuration = PostgresConfiguration()
        let (main, query) = split(rest, at: "?")
        let (authority, path) = split(main, at: "/")
        try parseAuthority(authority, into: &configuration)
        if let path, !path.isEmpty {
            guard !path.contains("/") else {
                throw .invalidURL("the database name must not contain '/' (percent-encode it as %2F)")
            }
            configuration.database = try percentDecode(path, component: "database name")
        }
        if let query {
            try parseQuery(query, into: &configuration)
        }
        return configuration
    }

    private static func stripScheme(_ url: String) -> Substring? {
        for scheme in ["postgresql://", "postgres://"] {
            if url.lowercased().hasPrefix(scheme) {
                return url.dropFirst(scheme.count)
            }
        }
        return nil
    }

    private static func split(_ text: Substring, at separator: Character) -> (Substring, Substring?) {
        guard let index = text.firstIndex(of: separator) else { return (text, nil) }
        return (text[..<index], text[text.index(after: index)...])
    }

    private static func parseAuthority(_ authority: Substring, into configuration: inout PostgresConfiguration)
        throws(PostgresError)
    {
        var hostAndPort = authority
        // The last '@' ends the user info, so an unencoded '@' in a password still parses.
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            hostAndPort = authority[authority.index(after: at)...]
            let (user, password) = split(userInfo, at: ":")
            if !user.isEmpty {
                configuration.user = try percentDecode(user, component: "user name")
            }
            if let password {
                configuration.password = try percentDecode(password, component: "password")
            }
        }
        guard !hostAndPort.contains(",") else {
            throw .invalidURL("multiple hosts are not supported")
        }
        var portText: Substring?
        if hostAndPort.hasPrefix("[") {
            guard let close = hostAndPort.firstIndex(of: "]") else {
                throw .invalidURL("the IPv6 host is missing its closing ']'")
            }
            configuration.host = String(hostAndPort[hostAndPort.index(after: hostAndPort.startIndex)..<close])
            let after = hostAndPort[hostAndPort.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .invalidURL("unexpected text after the IPv6 host") }
                portText = after.dropFirst()
            }
        } else {
            let (host, port) = split(hostAndPort, at: ":")
            if !host.isEmpty {
                configuration.host = try percentDecode(host, component: "host")
            }
            portText = port
        }
        if let portText {
            configuration.port = try parsePort(portText)
        }
    }

    private static func parsePort(_ text: some StringProtocol) throws(PostgresError) -> Int {
        guard let port = Int(text), (1...65_535).contains(port), text.allSatisfy(\.isASCII) else {
            throw .invalidURL("the port must be a number from 1 to 65535")
        }
        return port
    }

    private static func parseQuery(_ query: Substring, into configuration: inout PostgresConfiguration)
        throws(PostgresError)
    {
        var seen: Set<String> = []
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let (rawKey, rawValue) = split(pair, at: "=")
            let key = try percentDecode(rawKey, component: "query parameter name")
            guard let rawValue else {
                throw .invalidURL("query parameter '\(key)' has no value (expected \(key)=…)")
            }
            guard seen.insert(key).inserted else {
                throw .invalidURL("query parameter '\(key)' is given more than once")
            }
            let value = try percentDecode(rawValue, component: "value of query parameter '\(key)'")
            try apply(key: key, value: value, to: &configuration)
        }
    }

    private static func apply(key: String, value: String, to configuration: inout PostgresConfiguration)
        throws(PostgresError)
    {
        switch key {
        case "sslmode":
            guard let mode = PostgresSSLMode(rawValue: value) else {
                let allowed = PostgresSSLMode.allCases.map(\.rawValue).joined(separator: ", ")
                throw .invalidURL("sslmode '\(value)' is not one of \(allowed)")
            }
            configuration.sslMode = mode
        case "sslrootcert": configuration.sslRootCert = try nonEmpty(value, key)
        case "sslcert": configuration.sslCert = try nonEmpty(value, key)
        case "sslkey": configuration.sslKey = try nonEmpty(value, key)
        case "application_name": configuration.applicationName = value
        case "connect_timeout":
            guard let seconds = Int(value), seconds >= 0 else {
                throw .invalidURL("connect_timeout must be a whole number of seconds (0 or more)")
            }
            configuration.connectTimeoutSeconds = seconds
        case "host": configuration.host = try nonEmpty(value, key)
        case "port": configuration.port = try parsePort(value)
        case "user": configuration.user = try nonEmpty(value, key)
        case "password": configuration.password = value
        case "dbname": configuration.database = try nonEmpty(value, key)
        case "client_encoding":
            throw .invalidURL("client_encoding cannot be set: PayPipe always uses UTF8")
        default:
            guard passThroughKeys.contains(key) else {
                throw .invalidURL("unknown connection parameter '\(key)'")
            }
            configuration.additionalParameters[key] = value
        }
    }

    private static func nonEmpty(_ value: String, _ key: String) throws(PostgresError) -> String {
        guard !value.isEmpty else { throw .invalidURL("query parameter '\(key)' must not be empty") }
        return value
    }

    /// Decodes `%XX` escapes; the result must be UTF-8. `component` names the part in errors (never its text).
    static func percentDecode(_ text: some StringProtocol, component: String) throws(PostgresError) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(PostgresHex.value(of:)), let low = iterator.next().flatMap(PostgresHex.value(of:)) else {
                throw .invalidURL("the \(component) contains an invalid percent-encoding ('%' must be followed by two hex digits)")
            }
            bytes.append(high << 4 | low)
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw .invalidURL("the \(component) is not valid UTF-8 after percent-decoding")
        }
        guard !bytes.contains(0) else {
            throw .invalidURL("the \(component) must not contain a NUL byte (%00)")
        }
        return decoded
    }

    /// Percent-encodes everything except RFC 3986 unreserved characters.
    static func percentEncode(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += "%"
                encoded.unicodeScalars.append(Unicode.Scalar(PostgresHex.uppercaseDigits[Int(byte >> 4)]))
                encoded.unicodeScalars.append(Unicode.Scalar(PostgresHex.uppercaseDigits[Int(byte & 0x0F)]))
            }
        }
        return encoded
    }

}
