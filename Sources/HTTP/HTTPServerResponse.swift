/// What an `HTTPServer` handler returns. `Content-Length` is added by the server; header fields with an empty
/// value are not sent (libmicrohttpd limitation).
public struct HTTPServerResponse: Sendable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]

    public init(status: Int = 200, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
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
