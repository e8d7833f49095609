import HTTP
import Synchronization

/// Runs `body` against a started loopback `HTTPServer` on an ephemeral port, then stops it.
func withServer<T>(
    maxBodyBytes: Int = 1 << 20,
    threads: Int = 2,
    handler: @escaping @Sendable (HTTPServerRequest) -> HTTPServerResponse,
    _ body: (_ baseURL: String) throws -> T
) throws -> T {
    let server = HTTPServer(host: "127.0.0.1", port: 0, threads: threads, maxBodyBytes: maxBodyBytes, handler: handler)
    try server.start()
    defer { server.stop() }
    return try body("http://127.0.0.1:\(server.boundPort)")
}

/// Captures values seen by a server handler running on libmicrohttpd threads.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    func append(_ value: Value) {
        values.withLock { $0.append(value) }
    }

    var all: [Value] {
        values.withLock { $0 }
    }
}

/// Echo handler: method, path, sorted query and selected headers in response headers, body echoed.
let echoHandler: @Sendable (HTTPServerRequest) -> HTTPServerResponse = { request in
    var headers = [
        HTTPHeader("X-Method", request.method),
        HTTPHeader("X-Path", request.path),
        HTTPHeader("X-Query", request.query.sorted(by: { $0.key < $1.key }).map { "\($0.key)=\($0.value)" }.joined(separator: "&")),
        HTTPHeader("X-Body-Length", String(request.body.count)),
        HTTPHeader("X-Remote", request.remoteAddress ?? "none"),
    ]
    if let custom = request.header("x-custom-request") {
        headers.append(HTTPHeader("X-Echo-Custom", custom))
    }
    if let contentType = request.header("content-type") {
        headers.append(HTTPHeader("X-Echo-Content-Type", contentType))
    }
    return HTTPServerResponse(status: 200, headers: headers, body: request.body)
}
