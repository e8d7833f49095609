import HTTP

/// GETs a URL with the project's libcurl client (tests of the observability endpoints).
enum HTTPProbe {
    static func get(_ url: String) throws -> (status: Int, body: String) {
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 2, totalTimeout: 5))
        let response = try client.send(HTTPRequest(method: "GET", url: url))
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }
}
