import HTTP

/// `/healthz` and `/metrics` for one worker, on libmicrohttpd (through the HTTP module).
/// Container health checks call `/healthz` (`paypipe healthcheck URL`); Prometheus scrapes `/metrics`.
public final class ObservabilityServer: Sendable {
    private let server: HTTPServer

    public init(host: String, port: UInt16, registry: MetricsRegistry, health: @escaping @Sendable () -> HealthReport) throws {
        server = HTTPServer(host: host, port: port, threads: 1) { request in
            switch (request.method, request.path) {
            case ("GET", "/healthz"):
                let report = health()
                return HTTPServerResponse.json(Array(report.json.utf8), status: report.isHealthy ? 200 : 503)
            case ("GET", "/metrics"):
                var response = HTTPServerResponse.text(registry.render(), status: 200)
                response.headers = [HTTPHeader(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")]
                return response
            default:
                return HTTPServerResponse.text("not found\n", status: 404)
            }
        }
        try server.start()
    }

    public var port: UInt16 { server.boundPort }

    public func stop() { server.stop() }
}
