import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A deliberately misbehaving HTTP/1.1 server on a raw socket, for failure modes libmicrohttpd will not produce.
///
/// For every request received (over any connection) it asks `script` what to do: answer with a keep-alive 200 or
/// close the connection without answering. It records every request line it read.
final class RawTCPServer: Sendable {
    enum Action: Sendable {
        case respond
        case closeWithoutResponse
    }

    let port: UInt16
    private let listener: Int32
    private let requests = Mutex<[String]>([])
    private let script: @Sendable (_ requestIndex: Int) -> Action

    init(script: @escaping @Sendable (_ requestIndex: Int) -> Action) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(fd, generic, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, generic, &length) == 0
            }
        }
        guard fd >= 0, bound else { throw POSIXError(.EADDRNOTAVAIL) }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        self.script = script
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    var requestLines: [String] {
        requests.withLock { $0 }
    }

    /// Closing the listener makes the blocked accept() fail, which ends the accept thread.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            let thread = Thread { [self] in serve(connection) }
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var buffer: [UInt8] = []
        while let request = readRequest(connection, buffer: &buffer) {
            let index = requests.withLock { requests in
                requests.append(request)
                return requests.count - 1
            }
            switch script(index) {
            case .respond:
                let response = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok".utf8)
                _ = response.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            case .closeWithoutResponse:
                return
            }
        }
    }

    /// Reads one request (headers + Content-Length body); returns its request line, or nil at EOF.
    private func readRequest(_ connection: Int32, buffer: inout [UInt8]) -> String? {
        let separator = Array("\r\n\r\n".utf8)
        while true {
            if let end = buffer.firstRange(of: separator) {
                let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                let lines = head.components(separatedBy: "\r\n")
                let length = lines.dropFirst()
                    .first(where: { $0.lowercased().hasPrefix("content-length:") })
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if buffer.count >= end.upperBound + length {
                    buffer.removeFirst(end.upperBound + length)
                    return lines[0]
                }
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            buffer.append(contentsOf: chunk[..<count])
        }
    }
}
