import Foundation
import Testing

extension Integration {
/// Every `paypipe_*` metric name that README.md and docs/*.md give is one the workers really export: the five worker
/// processes (``PipelineProcesses``, as scripts/demo runs them) are scraped over HTTP, and each documented name must be
/// a metric family of one of the scrapes (a histogram's `_bucket`, `_sum` and `_count` included). A worker registers
/// its families when it starts, before it handles anything, so the test needs no traffic; it waits for the names only
/// as long as the workers take to start, and then names every documented metric none of them exports.
/// (The names prometheus/alerts.yml uses are checked against a real Prometheus by scripts/demo.)
@Suite struct DocumentedMetricsTests {
    /// `paypipe_*` words of the docs that are not metrics, with what they are. Each must still occur in the docs.
    static let notMetrics: [String: String] = [
        "paypipe_bench": "the benchmark's database",
        "paypipe_test": "the test suite's database (`PAYPIPE_TEST_DATABASE_URL`)",
        "paypipe_chaos": "the chaos run's database",
        "paypipe_lifecycle_invariants": "the SQL function of the lifecycle CHECK (migration 10)",
        "paypipe_lifecycle_edge": "the SQL function generated from MoneyLifecycle's edges (migration 12)",
        "paypipe_lifecycle_amounts_refused": "the SQL function generated from MoneyLifecycle's amount rules (migration 12)",
        "paypipe_sandbox_tappay": "the TapPay sandbox merchant's partner identifier",
        "paypipe_fuzz_main": "paypipe-fuzz's renamed entry point",
        "paypipe_1": "the start of `paypipe_1.0`, the libraryversion PayPipe sends Trust Payments",
        "paypipe_apple_notifications_total": "exported by paypipe-apple-notifications, which PipelineProcesses does not run "
            + "(AppleNotificationTests scrapes it)",
    ]

    /// The `paypipe_*` words of README.md and every docs/*.md, with the documents that use each.
    static func documentedNames() throws -> [String: Set<String>] {
        let root = PipelineProcesses.packageRoot
        let docs = root.appendingPathComponent("docs")
        let pages = ["README.md"] + (try FileManager.default.contentsOfDirectory(atPath: docs.path))
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
        let word = try Regex(#"\bpaypipe_[a-z0-9_]*[a-z0-9]"#)
        var names: [String: Set<String>] = [:]
        for page in pages {
            let text = try String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)
            for match in text.matches(of: word) { names[String(text[match.range]), default: []].insert(page) }
        }
        return names
    }

    /// The metric families one scrape declares (`# TYPE name kind`), with the sample names a histogram adds.
    static func families(_ scrape: MetricsScrape) -> Set<String> {
        var names: Set<String> = []
        for line in scrape.text.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let fields = line.split(separator: " ")
            guard fields.count == 4 else { continue }
            let name = String(fields[2])
            names.insert(name)
            if fields[3] == "histogram" { names.formUnion(["_bucket", "_sum", "_count"].map { name + $0 }) }
        }
        return names.union(scrape.samples.map(\.name))
    }

    @Test func everyMetricNamedInTheDocsIsExportedByAWorker() throws {
        let documented = try Self.documentedNames()
        let stale = Self.notMetrics.keys.filter { documented[$0] == nil }.sorted()
        #expect(stale.isEmpty, "no longer in the docs, remove from notMetrics: \(stale)")
        let metrics = documented.filter { Self.notMetrics[$0.key] == nil }
        #expect(metrics.count >= 10, "the docs name \(metrics.count) metrics: is the page set right?")

        let stack = try PipelineProcesses()
        defer {
            stack.stop()
            stack.removeFiles()
        }
        var exported: [String: Set<String>] = [:]   // worker -> families
        func missing() -> [String] { metrics.keys.filter { name in !exported.values.contains { $0.contains(name) } }.sorted() }
        do {
            try TestServices.eventually(timeout: 60, "every worker started and every documented metric exported") {
                for worker in PipelineProcesses.workers {
                    guard let port = stack.metricsPort(worker) else { return false }
                    exported[worker] = Self.families(try MetricsScrape.scrape(port: UInt16(port)))
                }
                return missing().isEmpty
            }
        } catch {
            let started = PipelineProcesses.workers.filter { exported[$0] != nil }
            Issue.record("""
                workers scraped: \(started); documented metrics no worker exports: \
                \(missing().map { "\($0) (\(metrics[$0]!.sorted().joined(separator: ", ")))" }); \(error)
                """)
        }
        #expect(Set(exported.keys) == Set(PipelineProcesses.workers), "every worker serves /metrics")
    }
}
}
