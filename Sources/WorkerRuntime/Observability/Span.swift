import Foundation

/// One recorded span: a stage's handling of one message (or any timed piece of work), as the exporter sends it.
/// The runtime knows no payments: the stage supplies the attributes that name what the span was about.
public struct Span: Sendable, Equatable {
    /// OTLP's `SpanKind` numbers (opentelemetry-proto trace.proto).
    public enum Kind: Int, Sendable {
        case `internal` = 1, server = 2, client = 3, producer = 4, consumer = 5
    }

    /// OTLP's `Status`: a span that ended well, or one that failed with a message (a failure code, never card data).
    public enum Status: Sendable, Equatable {
        case ok
        case error(String)
    }

    public let name: String
    /// The span's own context: its trace and its span id (what children name as their parent).
    public let context: TraceContext
    /// The span it was caused by (the previous stage's), nil for a trace's root.
    public let parentSpanId: String?
    public let kind: Kind
    /// Nanoseconds since the Unix epoch.
    public let startNanos: UInt64
    public let endNanos: UInt64
    public let status: Status
    public let attributes: [SpanAttribute]

    public init(name: String, context: TraceContext, parentSpanId: String?, kind: Kind = .consumer, start: Date, end: Date,
                status: Status, attributes: [SpanAttribute] = []) {
        self.name = name
        self.context = context
        self.parentSpanId = parentSpanId
        self.kind = kind
        startNanos = Self.nanos(start)
        endNanos = max(startNanos, Self.nanos(end))
        self.status = status
        self.attributes = attributes
    }

    /// Whole seconds and the fraction apart: a Double of ~1.7e18 nanoseconds would be off by hundreds of them.
    static func nanos(_ date: Date) -> UInt64 {
        let seconds = date.timeIntervalSince1970
        guard seconds > 0 else { return 0 }
        let whole = seconds.rounded(.down)
        return UInt64(whole) * 1_000_000_000 + UInt64(((seconds - whole) * 1e9).rounded())
    }
}

/// A string attribute of a span (OTLP `KeyValue` with a `stringValue`).
public struct SpanAttribute: Sendable, Equatable {
    public let key: String
    public let value: String

    public init(_ key: String, _ value: String) {
        (self.key, self.value) = (key, value)
    }
}

/// The OTLP/HTTP JSON body of an `ExportTraceServiceRequest` (https://opentelemetry.io/docs/specs/otlp/, "JSON Protobuf
/// Encoding"): field names in lowerCamelCase, trace and span ids as hex strings (not protobuf JSON's base64), 64-bit
/// integers (the `*TimeUnixNano` fields) as decimal strings, enums as integers.
public enum OTLPJSON {
    /// One `resourceSpans` entry for `resource` (e.g. `service.name`), one `scopeSpans` entry named `scope`.
    public static func exportRequest(_ spans: [Span], resource: [SpanAttribute], scope: String) -> [UInt8] {
        var json = "{\"resourceSpans\":[{\"resource\":{\"attributes\":\(attributes(resource))},"
        json += "\"scopeSpans\":[{\"scope\":{\"name\":\(string(scope))},\"spans\":["
        json += spans.map(span).joined(separator: ",")
        json += "]}]}]}"
        return Array(json.utf8)
    }

    static func span(_ span: Span) -> String {
        var json = "{\"traceId\":\"\(span.context.traceId)\",\"spanId\":\"\(span.context.spanId)\""
        if let state = span.context.state { json += ",\"traceState\":\(string(state))" }
        if let parent = span.parentSpanId { json += ",\"parentSpanId\":\"\(parent)\"" }
        json += ",\"name\":\(string(span.name)),\"kind\":\(span.kind.rawValue)"
        json += ",\"startTimeUnixNano\":\"\(span.startNanos)\",\"endTimeUnixNano\":\"\(span.endNanos)\""
        json += ",\"attributes\":\(attributes(span.attributes))"
        switch span.status {
        case .ok: json += ",\"status\":{\"code\":1}"
        case .error(let message): json += ",\"status\":{\"code\":2,\"message\":\(string(message))}"
        }
        return json + "}"
    }

    static func attributes(_ attributes: [SpanAttribute]) -> String {
        "[" + attributes.map { "{\"key\":\(string($0.key)),\"value\":{\"stringValue\":\(string($0.value))}}" }.joined(separator: ",") + "]"
    }

    private static func string(_ text: String) -> String { LogValue.string(text).json }
}

/// The exporter's bounded buffer, pure: spans wait here between the lanes that record them and the background export.
/// A full buffer refuses the span (the caller counts it as dropped): the payment's path never waits for the exporter.
public struct SpanQueue: Sendable {
    public let capacity: Int
    public private(set) var spans: [Span] = []

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Appends `span` unless the queue is full; returns whether it was kept.
    public mutating func offer(_ span: Span) -> Bool {
        guard spans.count < capacity else { return false }
        spans.append(span)
        return true
    }

    /// The oldest `maxCount` spans, removed from the queue.
    public mutating func take(_ maxCount: Int) -> [Span] {
        let count = min(max(0, maxCount), spans.count)
        defer { spans.removeFirst(count) }
        return Array(spans.prefix(count))
    }

    public var count: Int { spans.count }
    public var isEmpty: Bool { spans.isEmpty }
}
