/// A request for `HTTPClient`.
///
/// The body is raw bytes so callers control serialisation exactly (signed JSON, form bodies).
public struct HTTPRequest: Sendable {
    /// An RFC 9110 method token, e.g. `GET`, `POST`.
    public var method: String
    /// An absolute `http` or `https` URL.
    public var url: String
    /// Sent in order. A field with an empty value is sent as `Name:` with no value.
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// Consulted once per connection attempt, right before the request is written (see `HTTPSendGate`).
    public var sendGate: HTTPSendGate?
    /// Overrides the client's ``HTTPClientConfiguration/connectTimeout`` for this request (nil: the client's).
    public var connectTimeout: Double?
    /// Overrides the client's ``HTTPClientConfiguration/totalTimeout`` for this request (nil: the client's): one
    /// pool of keep-alive clients serves calls with different deadlines.
    public var totalTimeout: Double?

    public init(
        method: String = "GET", url: String, headers: [HTTPHeader] = [], body: [UInt8] = [], sendGate: HTTPSendGate? = nil,
        connectTimeout: Double? = nil, totalTimeout: Double? = nil
    ) {
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.sendGate = sendGate
    }
}

extension HTTPRequest: CustomStringConvertible {
    /// Method and URL without the query, plus sizes: headers (Authorization) and bodies (card data) never appear.
    public var description: String {
        let path = url.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return "\(method) \(path) (\(headers.count) headers, \(body.count)-byte body)"
    }
}
