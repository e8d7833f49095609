import HTTP

/// `/healthz`, `/livez`, `/readyz` and `/metrics` for one worker, on libmicrohttpd (through the HTTP module).
/// Container health checks call `/healthz` (`paypipe healthcheck URL`); an orchestrator's liveness probe calls `/livez`
/// and its readiness probe `/readyz` (docs/operations.md "Probes"); Prometheus scrapes `/metrics`.
public final class ObservabilityServer: Sendable {
    private let server: HTTPServer

    /// `liveness` and `readiness` answer `/livez` and `/readyz`; without them those paths are 404.
    public init(
        host: String, port: UInt16, registry: MetricsRegistry, health: @escaping @Sendable () -> HealthReport,
        liveness: (@Sendable () -> HealthReport)? = nil, readiness: (@Sendable () -> HealthReport)? = nil
    ) throws {
        var probes: [String: @Sendable () -> HealthReport] = ["/healthz": health]
        probes["/livez"] = liveness
        probes["/readyz"] = readiness
        server = HTTPServer(host: host, port: port, threads: 1) { [probes] request in
            if request.method == "GET", let probe = probes[request.path] {
                let report = probe()
                return HTTPServerResponse.json(Array(report.json.utf8), status: report.isHealthy ? 200 : 503)
            }
            switch (request.method, request.path) {
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
