/// What an `HTTPServer` handler returns. `Content-Length` is added by the server; header fields with an empty
/// value are not sent (libmicrohttpd limitation).
public struct HTTPServerResponse: Sendable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// Close the connection without sending any response (test doubles simulating a connection reset).
    public var abortsConnection = false

    public init(status: Int = 200, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// No response at all: the connection is dropped, as by a crashed or reset peer.
    public static var connectionReset: HTTPServerResponse {
        var response = HTTPServerResponse(status: 500)
        response.abortsConnection = true
        return response
    }

    /// A UTF-8 `text/plain` response.
    public static func text(_ text: String, status: Int = 200) -> HTTPServerResponse {
        HTTPServerResponse(
            status: status,
            headers: [HTTPHeader(name: "Content-Type", value: "text/plain; charset=utf-8")],
            body: Array(text.utf8)
        )
    }

    /// An `application/json` response carrying `data` verbatim (callers serialise deterministically themselves).
    public static func json(_ data: [UInt8], status: Int = 200) -> HTTPServerResponse {
        HTTPServerResponse(
            status: status,
            headers: [HTTPHeader(name: "Content-Type", value: "application/json")],
            body: data
        )
    }
}

extension HTTPServerResponse: CustomStringConvertible {
    public var description: String {
        "HTTP \(status) (\(headers.count) headers, \(body.count)-byte body)"
    }
}
