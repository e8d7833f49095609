import Foundation
import CLibPQ

/// `postgresql://` URLs parsed by libpq itself (`PQconninfoParse`), so PayPipe reads a URL exactly as `psql` and
/// every other libpq client do, multi-host lists and `target_session_attrs` included.
///
/// What stays here is policy, not parsing: which keywords PayPipe accepts, value checks that libpq would only make
/// at the first connect (ports, `connect_timeout`, `sslmode`), and keeping secrets out of error text. libpq's own
/// messages quote the offending text, which for a URL can be (part of) the password, so quoted fragments are
/// masked unless they are plain keyword-like words.
enum PostgresConninfo {
    /// libpq keywords accepted in the query string and passed through unchanged. Anything else libpq knows
    /// (`hostaddr`, `service`, `passfile`, …) is refused: those can redirect the connection or pull settings from
    /// files around the checks ``ConnectionSecurityPolicy`` makes on the URL.
    static let passThroughKeys: Set<String> = [
        "options", "sslcrl", "sslsni", "sslcompression", "keepalives", "keepalives_idle", "keepalives_interval",
        "keepalives_count", "tcp_user_timeout", "target_session_attrs", "channel_binding", "gssencmode",
    ]
    /// Keywords mapped onto typed fields of ``PostgresConfiguration``.
    static let typedKeys: Set<String> = [
        "host", "port", "user", "password", "dbname", "sslmode", "sslrootcert", "sslcert", "sslkey",
        "application_name", "connect_timeout",
    ]

    static func parse(_ url: String) throws(PostgresError) -> PostgresConfiguration {
        let options = try parseOptions(normalized(url))
        for key in options.keys.sorted() where !typedKeys.contains(key) && !passThroughKeys.contains(key) {
            if key == "client_encoding" {
                throw .invalidURL("client_encoding cannot be set: PayPipe always uses UTF8")
            }
            throw .invalidURL("connection parameter '\(key)' is not supported by PayPipe")
        }
        var configuration = PostgresConfiguration()
        configuration.endpoints = try endpoints(hosts: options["host"], ports: options["port"])
        configuration.user = try nonEmpty(options["user"], "user")
        configuration.password = options["password"]
        configuration.database = try nonEmpty(options["dbname"], "dbname")
        if let mode = options["sslmode"] {
            guard let parsed = PostgresSSLMode(rawValue: mode) else {
                let allowed = PostgresSSLMode.allCases.map(\.rawValue).joined(separator: ", ")
                throw .invalidURL("sslmode '\(mode)' is not one of \(allowed)")
            }
            configuration.sslMode = parsed
        }
        configuration.sslRootCert = try nonEmpty(options["sslrootcert"], "sslrootcert")
        configuration.sslCert = try nonEmpty(options["sslcert"], "sslcert")
        configuration.sslKey = try nonEmpty(options["sslkey"], "sslkey")
        if let name = options["application_name"] { configuration.applicationName = name }
        if let timeout = options["connect_timeout"] {
            guard let seconds = Int(timeout), seconds >= 0 else {
                throw .invalidURL("connect_timeout must be a whole number of seconds (0 or more)")
            }
            configuration.connectTimeoutSeconds = seconds
        }
        for key in passThroughKeys { configuration.additionalParameters[key] = options[key] }
        return configuration
    }

    /// libpq matches the scheme case-sensitively, and reads user info up to the *first* `@`. PayPipe has always
    /// accepted an upper-case scheme and an unencoded `@` in the password (the last `@` ends the user info), so both
    /// are normalised before libpq sees the URL: every earlier `@` of the authority is percent-encoded.
    static func normalized(_ url: String) throws(PostgresError) -> String {
        guard let scheme = ["postgresql://", "postgres://"].first(where: { url.lowercased().hasPrefix($0) }) else {
            throw .invalidURL("the scheme must be postgresql:// or postgres://")
        }
        let rest = url.dropFirst(scheme.count)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard let lastAt = authority.lastIndex(of: "@") else { return scheme + rest }
        let userInfo = authority[..<lastAt].replacingOccurrences(of: "@", with: "%40")
        return scheme + userInfo + rest[lastAt...]
    }

    /// `PQconninfoParse`: the keywords the URL sets (and nothing from the environment or defaults).
    private static func parseOptions(_ url: String) throws(PostgresError) -> [String: String] {
        var error: UnsafeMutablePointer<CChar>?
        guard let parsed = PQconninfoParse(url, &error) else {
            let message = error.map { String(cString: $0) } ?? "out of memory"
            if let error { PQfreemem(error) }
            throw .invalidURL("libpq: " + masked(message))
        }
        defer { PQconninfoFree(parsed) }
        var options: [String: String] = [:]
        var option = parsed
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { options[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return options
    }

    /// libpq's comma-separated `host` and `port` lists as endpoints. One port applies to every host; an empty entry
    /// is libpq's default (the default socket directory, port 5432).
    static func endpoints(hosts: String?, ports: String?) throws(PostgresError) -> [PostgresEndpoint] {
        let hostList = (hosts ?? "").split(separator: ",", omittingEmptySubsequences: false).map { $0.isEmpty ? nil : String($0) }
        let portList = try (ports ?? "").split(separator: ",", omittingEmptySubsequences: false).map { text throws(PostgresError) in
            try port(text)
        }
        guard portList.count == 1 || portList.count == hostList.count else {
            throw .invalidURL("\(portList.count) ports given for \(hostList.count) hosts (give one port, or one per host)")
        }
        return hostList.indices.map { PostgresEndpoint(host: hostList[$0], port: portList.count == 1 ? portList[0] : portList[$0]) }
    }

    private static func port(_ text: Substring) throws(PostgresError) -> Int? {
        guard !text.isEmpty else { return nil }
        guard text.allSatisfy(\.isASCII), let port = Int(text), (1...65_535).contains(port) else {
            throw .invalidURL("the port must be a number from 1 to 65535")
        }
        return port
    }

    private static func nonEmpty(_ value: String?, _ key: String) throws(PostgresError) -> String? {
        guard let value else { return nil }
        guard !value.isEmpty else { throw .invalidURL("connection parameter '\(key)' must not be empty") }
        return value
    }

    /// libpq's message with every quoted fragment that is not a plain word (a keyword such as `bogus` or `sslmode`) or a
    /// lone separator (`"="`, `"]"`) replaced by `"…"`: a percent-encoded token, a host list or the whole URL may carry the password.
    static func masked(_ message: String) -> String {
        let parts = message.trimmingSuffix(while: \.isNewline).split(separator: "\"", omittingEmptySubsequences: false)
        return parts.enumerated().map { index, part in
            guard index % 2 == 1 else { return String(part) }
            let isWord = !part.isEmpty && part.count <= 64 && part.allSatisfy { $0.isASCII && ($0.isLetter || $0 == "_") }
            let isPunctuation = !part.isEmpty && part.count <= 2 && part.allSatisfy { $0.isASCII && !$0.isLetter && !$0.isNumber && !$0.isWhitespace }
            return isWord || isPunctuation ? String(part) : "…"
        }.joined(separator: "\"")
    }

    /// Percent-encodes everything except RFC 3986 unreserved characters (for the redacted display form).
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

private extension String {
    func trimmingSuffix(while predicate: (Character) -> Bool) -> Substring {
        var end = endIndex
        while end > startIndex, predicate(self[index(before: end)]) { end = index(before: end) }
        return self[..<end]
    }
}
