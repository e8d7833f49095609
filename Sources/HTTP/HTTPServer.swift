import CMicroHTTPD
import CPayPipeShim
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 server on libmicrohttpd: an internal pool of epoll threads, each calling `handler` synchronously.
///
/// Meant for small internal endpoints (health, callbacks, test doubles of a gateway): the handler runs on an MHD
/// thread, so a slow handler occupies one of `threads` workers; bodies are fully buffered up to `maxBodyBytes`
/// (413 beyond). IPv4 only.
public final class HTTPServer: Sendable {
    public let host: String
    public let port: UInt16
    public let threads: Int
    public let maxBodyBytes: Int
    /// Seconds an idle connection is kept open.
    public let connectionTimeout: Int
    private let context: HTTPServerContext
    private let daemon = Mutex<RunningDaemon?>(nil)

    /// The libmicrohttpd daemon while running. `OpaquePointer` is only touched under `daemon`'s lock.
    private struct RunningDaemon {
        let pointer: OpaquePointer
        let port: UInt16
    }

    /// Bytes per connection for the request line, headers and one upload chunk (libmicrohttpd's default is 32 KiB).
    private static let connectionMemoryLimit = 64 * 1024

    /// - Parameter port: 0 picks an ephemeral port; read it from `boundPort` after `start()`.
    public init(
        host: String = "0.0.0.0",
        port: UInt16,
        threads: Int = 2,
        maxBodyBytes: Int = 1 << 20,
        connectionTimeout: Int = 30,
        handler: @escaping @Sendable (HTTPServerRequest) -> HTTPServerResponse
    ) {
        self.host = host
        self.port = port
        self.threads = max(1, threads)
        self.maxBodyBytes = maxBodyBytes
        self.connectionTimeout = connectionTimeout
        self.context = HTTPServerContext(maxBodyBytes: maxBodyBytes, handler: handler)
    }

    deinit {
        stop()
    }

    /// The port the server listens on, or 0 when not started.
    public var boundPort: UInt16 {
        daemon.withLock { $0?.port ?? 0 }
    }

    /// Binds and starts serving; returns once the socket is listening.
    public func start() throws(HTTPServerError) {
        var parsed = in_addr()
        guard inet_pton(AF_INET, host, &parsed) == 1 else { throw .invalidHost(host) }
        let result: Result<Void, HTTPServerError> = daemon.withLock { running in
            guard running == nil else { return .failure(.alreadyStarted) }
            guard
                let pointer = paypipe_mhd_start(
                    port, host, UInt32(threads), UInt32(max(0, connectionTimeout)), Self.connectionMemoryLimit,
                    HTTPServerContext.accessHandler, Unmanaged.passUnretained(context).toOpaque(),
                    HTTPServerContext.requestCompleted, nil)
            else {
                return .failure(.couldNotStart(host: host, port: port))
            }
            running = RunningDaemon(pointer: pointer, port: paypipe_mhd_bound_port(pointer))
            return .success(())
        }
        try result.get()
    }

    /// Stops listening, closes connections and waits for in-flight handlers to return. Idempotent.
    public func stop() {
        // Stop outside the lock: MHD_stop_daemon waits for running handlers, which may read `boundPort`.
        let stopping = daemon.withLock { running -> OpaquePointer? in
            let pointer = running?.pointer
            running = nil
            return pointer
        }
        if let stopping {
            MHD_stop_daemon(stopping)
        }
    }
}

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
