import COpenSSL
import Foundation
import HTTP
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A small HTTPS/1.1 server that requires a client certificate issued by a given CA (mutual TLS), on OpenSSL.
///
/// For test doubles of APIs that authenticate the caller by its certificate (Apple's merchant-token API): the
/// project's HTTP server (libmicrohttpd) serves plain HTTP only. One connection at a time on one thread, one request
/// per connection (`Connection: close`), bodies by `Content-Length` only: a simulator, not a production server.
/// A client without a certificate from `clientCA` fails the handshake and never reaches `handler`.
public final class MutualTLSServer: Sendable {
    public struct Files: Sendable {
        public var certificate: String
        public var key: String
        /// CA certificates (PEM) a client's certificate must chain to.
        public var clientCA: String

        public init(certificate: String, key: String, clientCA: String) {
            self.certificate = certificate
            self.key = key
            self.clientCA = clientCA
        }
    }

    public enum ServerError: Error, Sendable, CustomStringConvertible {
        case tls(String)
        case socket(String)

        public var description: String {
            switch self {
            case .tls(let reason): "mutual TLS server: \(reason)"
            case .socket(let reason): "mutual TLS server socket: \(reason)"
            }
        }
    }

    private struct Running {
        var socket: Int32
        var port: UInt16
    }

    private let files: Files
    private let handler: @Sendable (HTTPServerRequest) -> HTTPServerResponse
    private let running = Mutex<Running?>(nil)
    /// Handshakes refused (no or an untrusted client certificate), for tests.
    private let refused = Atomic<Int>(0)
    /// OpenSSL's reason for the last refused handshake.
    private let lastRefusal = Mutex<String?>(nil)

    public init(files: Files, handler: @escaping @Sendable (HTTPServerRequest) -> HTTPServerResponse) {
        self.files = files
        self.handler = handler
    }

    public var boundPort: UInt16 { running.withLock { $0?.port ?? 0 } }
    public var refusedHandshakes: Int { refused.load(ordering: .relaxed) }
    public var lastRefusalReason: String? { lastRefusal.withLock { $0 } }

    /// Binds 127.0.0.1:`port` (0: a free one) and serves on a thread until `stop()`.
    public func start(port: UInt16 = 0) throws(ServerError) {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw .tls("SSL_CTX_new failed") }
        guard SSL_CTX_use_certificate_chain_file(context, files.certificate) == 1,
              SSL_CTX_use_PrivateKey_file(context, files.key, SSL_FILETYPE_PEM) == 1,
              SSL_CTX_load_verify_locations(context, files.clientCA, nil) == 1 else {
            SSL_CTX_free(context)
            throw .tls("cannot load \(files.certificate), \(files.key) or \(files.clientCA)")
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        // Needed with client verification, or a resumed session fails ("session id context uninitialized").
        let sessionContext = Array("paypipe-mtls".utf8)
        SSL_CTX_set_session_id_context(context, sessionContext, UInt32(sessionContext.count))
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else {
            SSL_CTX_free(context)
            throw .socket("socket() failed")
        }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else {
            close(listener)
            SSL_CTX_free(context)
            throw .socket("cannot listen on 127.0.0.1:\(port)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let contextAddress = UInt(bitPattern: context)
        let thread = Thread { [self] in serve(listener: listener, context: OpaquePointer(bitPattern: contextAddress)!) }
        thread.name = "mtls-server"
        let boundPort = UInt16(bigEndian: address.sin_port)
        running.withLock { $0 = Running(socket: listener, port: boundPort) }
        thread.start()
    }

    /// Stops accepting; the thread ends after the connection in hand (if any).
    public func stop() {
        guard let listener = running.withLock({ running -> Int32? in
            defer { running = nil }
            return running?.socket
        }) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func serve(listener: Int32, context: OpaquePointer) {
        defer { SSL_CTX_free(context) }
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR { continue }
                return   // the listener was shut down
            }
            handle(connection: connection, context: context)
            close(connection)
        }
    }

    private func handle(connection: Int32, context: OpaquePointer) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let ssl = SSL_new(context) else { return }
        defer { SSL_free(ssl) }
        SSL_set_fd(ssl, connection)
        guard SSL_accept(ssl) == 1, SSL_get_verify_result(ssl) == X509_V_OK else {
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(ERR_get_error(), &text, text.count)
            let reason = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            ERR_clear_error()
            lastRefusal.withLock { $0 = reason }
            refused.add(1, ordering: .relaxed)
            return
        }
        var response: HTTPServerResponse
        if var request = Self.readRequest(ssl) {
            // The verified client certificate's UID (Apple's merchant identity certificates carry the merchant id there),
            // for the handler; a header of that name sent by the client is dropped, never trusted.
            request.headers.removeAll { $0.name.lowercased() == Self.clientUIDHeader }
            if let uid = Self.peerUID(ssl) { request.headers.append(HTTPHeader(name: Self.clientUIDHeader, value: uid)) }
            response = handler(request)
        } else {
            response = .text("bad request\n", status: 400)
        }
        var head = "HTTP/1.1 \(response.status) \(response.status < 400 ? "OK" : "Error")\r\n"
        for header in response.headers { head += "\(header.name): \(header.value)\r\n" }
        head += "Content-Length: \(response.body.count)\r\nConnection: close\r\n\r\n"
        let bytes = Array(head.utf8) + response.body
        _ = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        SSL_shutdown(ssl)
    }

    /// The header the handler reads the client certificate's subject UID from (set only by the server).
    public static let clientUIDHeader = "x-mtls-client-uid"

    /// The subject UID (OID 0.9.2342.19200300.100.1.1) of the verified peer certificate, if it has one.
    static func peerUID(_ ssl: OpaquePointer) -> String? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        guard let name = X509_get_subject_name(certificate) else { return nil }
        var text = [CChar](repeating: 0, count: 256)
        let length = X509_NAME_get_text_by_NID(name, NID_userId, &text, Int32(text.count))
        guard length > 0 else { return nil }
        return String(decoding: text.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The request line, headers and a `Content-Length` body (at most 64 KiB in all).
    static func readRequest(_ ssl: OpaquePointer) -> HTTPServerRequest? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var headEnd: Int?
        var expected = Int.max
        while data.count < expected, data.count < 65_536 {
            let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            guard count > 0 else { break }
            data += buffer[0..<Int(count)]
            if headEnd == nil, let end = data.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound {
                headEnd = end
                let head = String(decoding: data[..<end], as: UTF8.self)
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                expected = end + length
            }
        }
        guard let headEnd else { return nil }
        let lines = String(decoding: data[..<(headEnd - 4)], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let requestLine = lines.first?.split(separator: " ") ?? []
        guard requestLine.count == 3 else { return nil }
        let headers = lines.dropFirst().compactMap { line -> HTTPHeader? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return HTTPHeader(name: String(line[..<colon]), value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let target = String(requestLine[1])
        let path = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? target
        return HTTPServerRequest(method: String(requestLine[0]), path: path.removingPercentEncoding ?? path, headers: headers,
                                 body: Array(data[headEnd...]))
    }
}
