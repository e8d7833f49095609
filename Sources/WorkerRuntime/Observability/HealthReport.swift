import Foundation

/// Named health checks; healthy only when all pass. Served as JSON by `/healthz`, `/livez` and `/readyz` (200 or 503).
public struct HealthReport: Sendable, Equatable {
    public let checks: [String: Bool]
    /// `/livez`: seconds since each loop's last progress. Omitted from the JSON when empty, so `/healthz` answers
    /// exactly as it always has.
    public let secondsSinceProgress: [String: Double]

    public init(checks: [String: Bool], secondsSinceProgress: [String: Double] = [:]) {
        self.checks = checks
        self.secondsSinceProgress = secondsSinceProgress
    }

    public var isHealthy: Bool { checks.values.allSatisfy { $0 } }

    public var json: String {
        let body = checks.keys.sorted().map { "\"\($0)\":\(checks[$0]! ? "true" : "false")" }.joined(separator: ",")
        var json = "{\"status\":\"\(isHealthy ? "ok" : "unavailable")\",\"checks\":{\(body)}"
        if !secondsSinceProgress.isEmpty {
            json += ",\"secondsSinceProgress\":{" + secondsSinceProgress.keys.sorted()
                .map { "\"\($0)\":\(String(format: "%.3f", secondsSinceProgress[$0]!))" }.joined(separator: ",") + "}"
        }
        return json + "}"
    }
}
