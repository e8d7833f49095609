/// A response received by `HTTPClient`.
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Header fields of the final response, in wire order (interim 1xx responses are dropped).
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// Seconds from the start of the transfer to its end, as measured by libcurl (CURLINFO_TOTAL_TIME).
    public var totalTime: Double

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [], totalTime: Double = 0) {
        self.status = status
        self.headers = headers
        self.body = body
        self.totalTime = totalTime
    }

    /// The first value of header `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.value(for: name)
    }
}

extension HTTPResponse: CustomStringConvertible {
    /// Status and sizes only: response bodies can carry card or token data.
    public var description: String {
        "HTTP \(status) (\(headers.count) headers, \(body.count)-byte body, \(totalTime) s)"
    }
}
