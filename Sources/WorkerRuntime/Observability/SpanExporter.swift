import Dispatch
import Foundation
import HTTP
import Synchronization

/// Where a worker's spans go: nowhere (the default), or an OTLP/HTTP collector through ``OTLPExporter``.
/// `record` is called on the payment's path, so it never blocks: it only appends to a bounded queue.
public protocol SpanRecorder: Sendable {
    func record(_ span: Span)
}

/// Tracing off (`PAYPIPE_OTLP_ENDPOINT` unset): spans are not kept. Trace context is still propagated.
public struct NoSpanRecorder: SpanRecorder {
    public init() {}
    public func record(_ span: Span) {}
}

/// `PAYPIPE_OTLP_ENDPOINT` and its companions: the exporter's settings (docs/observability.md).
public struct OTLPSettings: Sendable, Equatable {
    /// The collector's base URL; spans are POSTed to `<endpoint>/v1/traces`.
    public var endpoint: String
    public var serviceName: String
    /// Spans per export request.
    public var batchSize: Int
    /// Spans waiting for export at most; more are dropped and counted.
    public var queueSize: Int
    /// One export request's time limit.
    public var timeoutSeconds: Double
    /// How long a span waits at most for its batch to fill.
    public var intervalSeconds: Double

    public init(endpoint: String, serviceName: String, batchSize: Int = 256, queueSize: Int = 4096, timeoutSeconds: Double = 5,
                intervalSeconds: Double = 1) {
        (self.endpoint, self.serviceName, self.batchSize, self.queueSize) = (endpoint, serviceName, batchSize, queueSize)
        (self.timeoutSeconds, self.intervalSeconds) = (timeoutSeconds, intervalSeconds)
    }

    /// `<endpoint>/v1/traces` (the OTLP/HTTP path for traces), however the endpoint ends.
    public var tracesURL: String {
        var base = endpoint
        while base.hasSuffix("/") { base.removeLast() }
        return base.hasSuffix("/v1/traces") ? base : base + "/v1/traces"
    }
}

/// The span metrics every worker exports (zero while tracing is off).
public enum SpanMetrics {
    public static let exported = "paypipe_spans_exported_total"
    public static let dropped = "paypipe_spans_dropped_total"
    /// The `reason` label of ``dropped``.
    public static let dropReasons = ["queue_full", "export_failed"]

    static func register(in registry: MetricsRegistry, labels: [String: String]) {
        registry.register(exported, kind: .counter, help: "Spans the OTLP collector accepted (PAYPIPE_OTLP_ENDPOINT).")
        registry.register(dropped, kind: .counter,
                          help: "Spans lost, by reason: queue_full (PAYPIPE_OTLP_QUEUE_SIZE reached), export_failed (the collector refused or was unreachable).")
        registry.zero(exported, labels: labels)
        for reason in dropReasons { registry.zero(dropped, labels: labels.merging(["reason": reason]) { $1 }) }
    }
}

/// Exports spans as OTLP/HTTP JSON from one background thread, in batches, never on the payment's path: ``record(_:)``
/// appends to a bounded ``SpanQueue`` (a full queue drops the span and counts it); the thread sends a batch when one is
/// full or ``OTLPSettings/intervalSeconds`` after the oldest span waited, one request at a time, each bounded by
/// ``OTLPSettings/timeoutSeconds``. A collector that is down or slow loses spans (counted as `export_failed`), never
/// payments: the lanes never wait for it, and a failed request is not retried (the queue keeps filling meanwhile).
public final class OTLPExporter: SpanRecorder, WorkerComponent {
    public let name = "otlp-exporter"
    public let settings: OTLPSettings
    private let registry: MetricsRegistry
    private let labels: [String: String]
    private let logger: Logger
    private let state: Mutex<State>
    /// Signalled when a batch is full, or to stop.
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchGroup()

    struct State {
        var queue: SpanQueue
        var stopping = false
        /// Whether the last request failed, so a collector that stays down is logged once, not per request.
        var failing = false
    }

    public init(settings: OTLPSettings, registry: MetricsRegistry, labels: [String: String], logger: Logger) {
        self.settings = settings
        self.registry = registry
        self.labels = labels
        self.logger = logger
        state = Mutex(State(queue: SpanQueue(capacity: settings.queueSize)))
    }

    public func record(_ span: Span) {
        let (kept, full) = state.withLock { state -> (Bool, Bool) in
            guard !state.stopping else { return (false, false) }
            let kept = state.queue.offer(span)
            return (kept, state.queue.count == settings.batchSize)
        }
        if !kept { registry.increment(SpanMetrics.dropped, labels: labels.merging(["reason": "queue_full"]) { $1 }) }
        if full { wake.signal() }
    }

    public func start() throws {
        done.enter()
        let thread = Thread { [self] in
            run()
            done.leave()
        }
        thread.name = name
        thread.start()
    }

    public func requestStop() {
        state.withLock { $0.stopping = true }
        wake.signal()
    }

    /// After the lanes stopped: what is still queued is sent (each request within its timeout), then the thread ends.
    public func waitUntilStopped(deadline: DispatchTime) -> Bool {
        requestStop()
        return done.wait(timeout: deadline) == .success
    }

    private func run() {
        let client = HTTPClient(configuration: HTTPClientConfiguration(
            connectTimeout: min(settings.timeoutSeconds, 5), totalTimeout: settings.timeoutSeconds, followRedirects: false))
        while true {
            _ = wake.wait(timeout: .now() + settings.intervalSeconds)
            while true {
                let (batch, stopping) = state.withLock { ($0.queue.take(settings.batchSize), $0.stopping) }
                if batch.isEmpty {
                    if stopping { return }
                    break
                }
                send(batch, client: client)
            }
        }
    }

    private func send(_ batch: [Span], client: HTTPClient) {
        let body = OTLPJSON.exportRequest(batch, resource: [SpanAttribute("service.name", settings.serviceName)], scope: "paypipe")
        let failure: String?
        do {
            let response = try client.send(HTTPRequest(method: "POST", url: settings.tracesURL,
                                                       headers: [HTTPHeader("content-type", "application/json")], body: body))
            failure = (200..<300).contains(response.status) ? nil : "HTTP \(response.status)"
        } catch {
            failure = String(describing: error)
        }
        let wasFailing = state.withLock { state -> Bool in
            defer { state.failing = failure != nil }
            return state.failing
        }
        if let failure {
            registry.increment(SpanMetrics.dropped, labels: labels.merging(["reason": "export_failed"]) { $1 }, by: Double(batch.count))
            if !wasFailing { logger.warning("span_export_failed", [("url", .string(settings.tracesURL)), ("spans", .int(batch.count)), ("error", .string(failure))]) }
        } else {
            registry.increment(SpanMetrics.exported, labels: labels, by: Double(batch.count))
            if wasFailing { logger.info("span_export_recovered", [("url", .string(settings.tracesURL))]) }
        }
    }
}
