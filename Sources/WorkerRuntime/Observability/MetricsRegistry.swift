import Foundation
import Synchronization

/// In-process metrics rendered in the Prometheus text exposition format (version 0.0.4).
///
/// Deliberately small: counters, gauges and fixed-bucket histograms keyed by name and a sorted label
/// set. One lock guards all series; updates are a dictionary lookup and an add, far below the cost of
/// the database commit each batch makes, so contention is not a concern at pipeline rates.
public final class MetricsRegistry: Sendable {
    public enum Kind: String, Sendable { case counter, gauge, histogram }

    struct Family {
        var kind: Kind
        var help: String
        var buckets: [Double]
        var series: [[String: String]: Series] = [:]
    }

    struct Series {
        var value: Double = 0
        var bucketCounts: [UInt64] = []
        var sum: Double = 0
        var count: UInt64 = 0
    }

    /// Latency buckets in seconds, from 1 ms to 30 s.
    public static let latencyBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    private let families = Mutex<[String: Family]>([:])

    public init() {}

    /// Declares a metric family; declaring the same name again is a no-op.
    public func register(_ name: String, kind: Kind, help: String, buckets: [Double] = MetricsRegistry.latencyBuckets) {
        families.withLock { families in
            if families[name] == nil { families[name] = Family(kind: kind, help: help, buckets: kind == .histogram ? buckets : []) }
        }
    }

    public func increment(_ name: String, labels: [String: String] = [:], by amount: Double = 1) {
        update(name, labels: labels) { series, _ in series.value += amount }
    }

    public func set(_ name: String, labels: [String: String] = [:], to value: Double) {
        update(name, labels: labels) { series, _ in series.value = value }
    }

    /// Creates a series at zero (a histogram's buckets too) unless it exists, so it is exported before its first event:
    /// Prometheus' rate() and increase() count a series' increments only from its second sample on.
    public func zero(_ name: String, labels: [String: String] = [:]) {
        update(name, labels: labels) { series, buckets in
            if series.bucketCounts.isEmpty { series.bucketCounts = Array(repeating: 0, count: buckets.count) }
        }
    }

    public func observe(_ name: String, labels: [String: String] = [:], _ value: Double) {
        update(name, labels: labels) { series, buckets in
            if series.bucketCounts.isEmpty { series.bucketCounts = Array(repeating: 0, count: buckets.count) }
            for (index, bound) in buckets.enumerated() where value <= bound { series.bucketCounts[index] += 1 }
            series.sum += value
            series.count += 1
        }
    }

    /// Replaces every series of a gauge family at once (series not in `series` disappear): for gauges describing a
    /// set that changes, such as the configured certificates.
    public func replace(_ name: String, with series: [[String: String]: Double]) {
        families.withLock { families in
            guard var family = families[name] else { preconditionFailure("metric \(name) used before register()") }
            family.series = series.mapValues { Series(value: $0) }
            families[name] = family
        }
    }

    /// Current value of a counter or gauge series (tests and `paypipe stats`).
    public func value(_ name: String, labels: [String: String] = [:]) -> Double {
        families.withLock { $0[name]?.series[labels]?.value ?? 0 }
    }

    private func update(_ name: String, labels: [String: String], _ body: (inout Series, [Double]) -> Void) {
        families.withLock { families in
            guard var family = families[name] else {
                preconditionFailure("metric \(name) used before register()")
            }
            body(&family.series[labels, default: Series()], family.buckets)
            families[name] = family
        }
    }

    /// The whole registry in Prometheus text format.
    public func render() -> String {
        let snapshot = families.withLock { $0 }
        var out = ""
        for name in snapshot.keys.sorted() {
            let family = snapshot[name]!
            out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.kind.rawValue)\n"
            for labels in family.series.keys.sorted(by: { Self.labelText($0) < Self.labelText($1) }) {
                let series = family.series[labels]!
                switch family.kind {
                case .counter, .gauge:
                    out += "\(name)\(Self.labelText(labels)) \(Self.number(series.value))\n"
                case .histogram:
                    for (index, bound) in family.buckets.enumerated() {
                        var bucketLabels = labels
                        bucketLabels["le"] = Self.number(bound)
                        out += "\(name)_bucket\(Self.labelText(bucketLabels)) \(series.bucketCounts[index])\n"
                    }
                    var infLabels = labels
                    infLabels["le"] = "+Inf"
                    out += "\(name)_bucket\(Self.labelText(infLabels)) \(series.count)\n"
                    out += "\(name)_sum\(Self.labelText(labels)) \(Self.number(series.sum))\n"
                    out += "\(name)_count\(Self.labelText(labels)) \(series.count)\n"
                }
            }
        }
        return out
    }

    static func labelText(_ labels: [String: String]) -> String {
        guard !labels.isEmpty else { return "" }
        let pairs = labels.keys.sorted().map { key in
            let escaped = labels[key]!.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
            return "\(key)=\"\(escaped)\""
        }
        return "{" + pairs.joined(separator: ",") + "}"
    }

    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
