/// A complete request as seen by an `HTTPServer` handler (the body is fully buffered before the handler runs).
public struct HTTPServerRequest: Sendable {
    public var method: String
    /// Percent-decoded path, without the query string (`%2F` decodes to `/`, so it cannot be told apart).
    public var path: String
    /// Percent-decoded query arguments. For a repeated key the first occurrence wins; `?flag` maps to "".
    public var query: [String: String]
    /// Request header fields in wire order; look them up with `header(_:)` (case-insensitive).
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// `ip:port` of the peer (`[ip]:port` for IPv6), when known.
    public var remoteAddress: String?

    public init(
        method: String,
        path: String,
        query: [String: String] = [:],
        headers: [HTTPHeader] = [],
        body: [UInt8] = [],
        remoteAddress: String? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// The first value of header `name`, compared case-insensitively (e.g. `Authorization` for HTTP Basic).
    public func header(_ name: String) -> String? {
        headers.value(for: name)
    }
}

extension HTTPServerRequest: CustomStringConvertible {
    /// Method, path and sizes only: query values, headers and bodies may carry credentials or card data.
    public var description: String {
        "\(method) \(path) (\(headers.count) headers, \(body.count)-byte body, from \(remoteAddress ?? "unknown"))"
    }
}
