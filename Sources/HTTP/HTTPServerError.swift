/// Why `HTTPServer.start()` failed.
public enum HTTPServerError: Error, Sendable, CustomStringConvertible {
    /// `host` is not an IPv4 address literal (names and IPv6 are not supported).
    case invalidHost(String)
    /// libmicrohttpd could not start (port in use, no permission, resource limits). Details go to stderr via
    /// MHD_USE_ERROR_LOG.
    case couldNotStart(host: String, port: UInt16)
    case alreadyStarted

    public var description: String {
        switch self {
        case .invalidHost(let host):
            return "HTTP server host \"\(host)\" is not an IPv4 address"
        case .couldNotStart(let host, let port):
            return "HTTP server could not listen on \(host):\(port) (see stderr for libmicrohttpd's reason)"
        case .alreadyStarted:
            return "HTTP server is already started"
        }
    }
}
