/// Named health checks; healthy only when all pass. Served as JSON by `/healthz` (200 or 503).
public struct HealthReport: Sendable, Equatable {
    public let checks: [String: Bool]

    public init(checks: [String: Bool]) {
        self.checks = checks
    }

    public var isHealthy: Bool { checks.values.allSatisfy { $0 } }

    public var json: String {
        let body = checks.keys.sorted().map { "\"\($0)\":\(checks[$0]! ? "true" : "false")" }.joined(separator: ",")
        return "{\"status\":\"\(isHealthy ? "ok" : "unavailable")\",\"checks\":{\(body)}}"
    }
}
