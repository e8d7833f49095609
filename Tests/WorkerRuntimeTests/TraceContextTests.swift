import AMQP
import Foundation
import Testing
@testable import WorkerRuntime

/// W3C Trace Context (https://www.w3.org/TR/trace-context/ §3.2, §3.3) as the runtime reads and writes it, the spans'
/// OTLP/HTTP JSON encoding and the exporter's bounded queue: the pure parts of tracing, without services.
@Suite struct TraceContextTests {
    static let example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test func parsesAndFormatsTheSpecExample() throws {
        let context = try #require(TraceContext.parse(traceparent: Self.example, tracestate: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"))
        #expect(context.traceId == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(context.spanId == "00f067aa0ba902b7")
        #expect(context.flags == 1)
        #expect(context.state == "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        #expect(context.traceparent == Self.example)
        #expect(TraceContext.parse(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.flags == 0)
    }

    @Test("a malformed traceparent is refused (the job then starts a new trace)", arguments: [
        "",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",     // uppercase
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",     // all-zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",     // all-zero parent id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // version ff
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",    // version 00 is exactly 55 characters
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",      // short
        "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",     // misplaced separator
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",     // flags not hex
        "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // version not hex
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",    // a later version's extra data must follow a dash
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
    ])
    func refusesMalformed(header: String) {
        #expect(TraceContext.parse(traceparent: header, tracestate: "a=b") == nil)
    }

    @Test func aLaterVersionIsReadAsVersion00AndWrittenAs00() throws {
        let context = try #require(TraceContext.parse(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-adds"))
        #expect(context.traceparent == Self.example)
    }

    @Test func aMalformedTracestateIsDroppedNotTheTrace() throws {
        for state in ["no-equals", String(repeating: "a=b,", count: 40) + "a=b", "k=v\u{7f}", String(repeating: "x", count: 600) + "=1"] {
            let context = try #require(TraceContext.parse(traceparent: Self.example, tracestate: state))
            #expect(context.state == nil, "\(state)")
        }
    }

    /// A generator that answers zeros first: a trace or span id is never all zero however the CSPRNG answers.
    struct ZerosFirst: RandomNumberGenerator {
        var zeros: Int
        var counter: UInt64 = 0x0123_4567_89ab_cdef
        mutating func next() -> UInt64 {
            if zeros > 0 {
                zeros -= 1
                return 0
            }
            counter &+= 1
            return counter
        }
    }

    @Test func generatedIdsAreNeverAllZero() throws {
        var generator = ZerosFirst(zeros: 3)   // the first trace id (2 words) and the first span id draw are zero
        let trace = TraceContext.newTrace(using: &generator)
        #expect(trace.traceId.count == 32 && trace.traceId != String(repeating: "0", count: 32))
        #expect(trace.spanId.count == 16 && trace.spanId != String(repeating: "0", count: 16))
        #expect(TraceContext.parse(traceparent: trace.traceparent) == trace)
        var zeros = ZerosFirst(zeros: 1)
        let child = trace.child(using: &zeros)
        #expect(child.traceId == trace.traceId && child.spanId != trace.spanId && child.spanId != String(repeating: "0", count: 16))
        // The system CSPRNG: distinct traces.
        #expect(Set((0..<100).map { _ in TraceContext.newTrace().traceId }).count == 100)
    }

    func delivery(headers: [String: AMQPFieldValue]) -> AMQPDelivery {
        var properties = AMQPProperties()
        properties.headers = headers
        return AMQPDelivery(body: [], properties: properties, exchange: "paypipe.jobs", routingKey: "payment.requested",
                            redelivered: false, deliveryTag: 1, generation: 1)
    }

    @Test func aDeliveryContinuesItsSendersTraceOrStartsOne() throws {
        let continued = DeliveryTrace.of(delivery(headers: ["traceparent": .string(Self.example), "tracestate": .bytes(Array("a=1".utf8))]))
        #expect(continued.parentSpanId == "00f067aa0ba902b7")
        #expect(continued.context.traceId == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(continued.context.spanId != "00f067aa0ba902b7")
        #expect(continued.context.state == "a=1")
        for headers: [String: AMQPFieldValue] in [[:], ["traceparent": .string("00-zz")], ["traceparent": .int(7)]] {
            let started = DeliveryTrace.of(delivery(headers: headers))
            #expect(started.parentSpanId == nil)
            #expect(started.context.traceId != "4bf92f3577b34da6a3ce929d0e0e4736")
        }
    }

    @Test func handOffsAndEventsNameTheHandlingSpanWhileCopiesKeepTheDeliverysHeaders() throws {
        let trace = DeliveryTrace.of(delivery(headers: ["traceparent": .string(Self.example)]))
        let router = DeliveryRouter(stage: StageName("authorize"), retrySchedule: RetrySchedule(delays: [1], maxRetries: 1))
        let handOff = trace.stamped(router.handOff(HandOffMessage(to: .submit, id: "p:submit", body: [])))
        #expect(handOff.properties.headers["traceparent"] == .string(trace.context.traceparent))
        #expect(handOff.properties.headers["tracestate"] == nil)
        let event = trace.stamped(router.message(for: .event(exchange: "paypipe.results", type: "payment.authorized", id: "e", body: [], timestamp: Date())))
        #expect(event.properties.headers["traceparent"] == .string(trace.context.traceparent))
        let original = delivery(headers: ["traceparent": .string(Self.example)])
        let deadLetter = trace.stamped(router.deadLetter(original, code: "x", reason: "y"))
        #expect(deadLetter.properties.headers["traceparent"] == .string(Self.example))
        #expect(trace.logFields.map(\.0) == ["traceId", "spanId"])
    }

    /// A hand-off re-driven from a payment's row continues the trace the row kept, even when it is published while
    /// another delivery is handled (a deferred completion: the operation's trace is not the payment's).
    @Test func aHandOffWithItsOwnTraceKeepsItWhateverDeliveryCausedIt() throws {
        let stored = try #require(TraceContext.parse(traceparent: Self.example, tracestate: "a=1"))
        let router = DeliveryRouter(stage: StageName("operations"), retrySchedule: RetrySchedule(delays: [1], maxRetries: 1))
        let redriven = router.handOff(HandOffMessage(to: StageName("authorize"), id: "p:authorize", body: [], trace: stored))
        #expect(redriven.properties.headers["traceparent"] == .string(Self.example))
        #expect(redriven.properties.headers["tracestate"] == .string("a=1"))
        let operation = DeliveryTrace.of(delivery(headers: ["traceparent": .string("00-1af7651916cd43dd8448eb211c80319d-b7ad6b7169203331-01")]))
        let published = operation.stamped(redriven)
        #expect(published.properties.headers["traceparent"] == .string(Self.example), "the payment's trace, not the operation's")
        #expect(published.properties.headers["tracestate"] == .string("a=1"))
        // Without a trace of its own, a hand-off outside any delivery carries none (the next stage starts one), and one
        // inside a delivery's handling names the handling span.
        let plain = router.handOff(HandOffMessage(to: StageName("authorize"), id: "p:authorize", body: []))
        #expect(plain.properties.headers["traceparent"] == nil)
        #expect(operation.stamped(plain).properties.headers["traceparent"] == .string(operation.context.traceparent))
    }

    @Test func aRowsStoredContextGivesItsLogFieldsAndABadOneNone() {
        let fields = TraceContext.logFields(traceparent: Self.example)
        #expect(fields.map(\.0) == ["traceId", "spanId"])
        #expect(fields.map(\.1) == [.string("4bf92f3577b34da6a3ce929d0e0e4736"), .string("00f067aa0ba902b7")])
        #expect(TraceContext.logFields(traceparent: nil).isEmpty)
        #expect(TraceContext.logFields(traceparent: "00-zz").isEmpty)
    }

    @Test func handlingEndsAsTheResultSays() {
        let handOff = HandlingEnd(.success(.handOff(HandOffMessage(to: .submit, id: "i", body: []))))
        #expect(handOff.outcome == "hand_off" && handOff.status == .ok)
        #expect(HandlingEnd(.success(.completed)).outcome == "completed")
        #expect(HandlingEnd(.success(.settled(note: "n", reason: "r"))).outcome == "settled")
        #expect(HandlingEnd(.success(.publish([]))).outcome == "published")
        let deadLettered = HandlingEnd(.failure(.unattributable(code: "malformed_job", reason: "r")))
        #expect(deadLettered.outcome == "dead_lettered" && deadLettered.status == .error("malformed_job"))
        let retried = HandlingEnd(.failure(.transient(code: "gateway_5xx", reason: "r")))
        #expect(retried.outcome == "retry" && retried.status == .error("gateway_5xx"))
    }

    @Test func encodesSpansAsOTLPJSON() throws {
        let root = try #require(TraceContext(traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", state: "a=1"))
        let start = Date(timeIntervalSince1970: 1_700_000_000.25)
        let spans = [
            Span(name: "decrypt", context: root, parentSpanId: nil, start: start, end: start.addingTimeInterval(0.5), status: .ok,
                 attributes: [SpanAttribute("jobId", "job \"1\"")]),
            Span(name: "authorize", context: try #require(TraceContext(traceId: root.traceId, spanId: "1111111111111111")), parentSpanId: root.spanId,
                 start: start, end: start.addingTimeInterval(-1), status: .error("gateway_5xx")),
        ]
        let body = OTLPJSON.exportRequest(spans, resource: [SpanAttribute("service.name", "paypipe-decrypt")], scope: "paypipe")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let resourceSpans = try #require((json["resourceSpans"] as? [[String: Any]])?.first)
        let resource = try #require((resourceSpans["resource"] as? [String: Any])?["attributes"] as? [[String: Any]])
        #expect(resource.first?["key"] as? String == "service.name")
        #expect((resource.first?["value"] as? [String: Any])?["stringValue"] as? String == "paypipe-decrypt")
        let scopeSpans = try #require((resourceSpans["scopeSpans"] as? [[String: Any]])?.first)
        #expect((scopeSpans["scope"] as? [String: Any])?["name"] as? String == "paypipe")
        let encoded = try #require(scopeSpans["spans"] as? [[String: Any]])
        #expect(encoded.count == 2)
        #expect(encoded[0]["traceId"] as? String == "4bf92f3577b34da6a3ce929d0e0e4736")   // hex, not base64
        #expect(encoded[0]["spanId"] as? String == "00f067aa0ba902b7")
        #expect(encoded[0]["parentSpanId"] == nil)
        #expect(encoded[0]["traceState"] as? String == "a=1")
        #expect(encoded[0]["kind"] as? Int == 5)
        #expect(encoded[0]["startTimeUnixNano"] as? String == "1700000000250000000")   // 64-bit integers as strings
        #expect(encoded[0]["endTimeUnixNano"] as? String == "1700000000750000000")
        #expect((encoded[0]["status"] as? [String: Any])?["code"] as? Int == 1)
        let attribute = try #require((encoded[0]["attributes"] as? [[String: Any]])?.first)
        #expect((attribute["value"] as? [String: Any])?["stringValue"] as? String == "job \"1\"")
        #expect(encoded[1]["parentSpanId"] as? String == "00f067aa0ba902b7")
        #expect(encoded[1]["endTimeUnixNano"] as? String == encoded[1]["startTimeUnixNano"] as? String, "an end before the start is clamped")
        let failed = try #require(encoded[1]["status"] as? [String: Any])
        #expect(failed["code"] as? Int == 2 && failed["message"] as? String == "gateway_5xx")
    }

    @Test func theQueueIsBoundedAndFirstInFirstOut() throws {
        let context = TraceContext.newTrace()
        func span(_ name: String) -> Span { Span(name: name, context: context, parentSpanId: nil, start: Date(), end: Date(), status: .ok) }
        var queue = SpanQueue(capacity: 3)
        let kept = ["a", "b", "c", "d"].map { queue.offer(span($0)) }
        #expect(kept == [true, true, true, false], "a full queue refuses (the exporter counts the span as dropped)")
        let first = queue.take(2)
        #expect(first.map(\.name) == ["a", "b"])
        let keptAgain = queue.offer(span("e"))
        #expect(keptAgain)
        let rest = queue.take(10)
        #expect(rest.map(\.name) == ["c", "e"])
        let none = queue.take(1)
        #expect(queue.isEmpty && none.isEmpty)
    }

    /// A full queue drops the span at once (the lane never waits), and a collector that is down loses the queued spans,
    /// counted, once the exporter flushes them on stop.
    @Test func theExporterDropsWhenFullAndCountsAFailedExport() throws {
        let registry = MetricsRegistry()
        let labels = ["stage": "decrypt"]
        SpanMetrics.register(in: registry, labels: labels)
        // Port 9 (discard) on loopback: nothing listens there, so the connection is refused at once.
        let exporter = OTLPExporter(settings: OTLPSettings(endpoint: "http://127.0.0.1:9", serviceName: "t", batchSize: 2, queueSize: 3, timeoutSeconds: 2),
                                    registry: registry, labels: labels, logger: Logger(component: "t", threshold: .error, sink: LogSink(capturing: ())))
        let context = TraceContext.newTrace()
        for _ in 0..<5 { exporter.record(Span(name: "s", context: context, parentSpanId: nil, start: Date(), end: Date(), status: .ok)) }
        #expect(registry.value(SpanMetrics.dropped, labels: ["stage": "decrypt", "reason": "queue_full"]) == 2)
        try exporter.start()
        #expect(exporter.waitUntilStopped(deadline: .now() + 30))
        #expect(registry.value(SpanMetrics.dropped, labels: ["stage": "decrypt", "reason": "export_failed"]) == 3)
        #expect(registry.value(SpanMetrics.exported, labels: labels) == 0)
    }

    @Test func settingsAreOffByDefaultAndReadWhenTheEndpointIsSet() throws {
        let base = ["PAYPIPE_ENV": "sandbox"]
        #expect(try WorkerConfiguration(defaultMetricsPort: 9101, environment: EnvironmentReader(base)).otlp == nil)
        let set = try WorkerConfiguration(defaultMetricsPort: 9101, environment: EnvironmentReader(base.merging([
            "PAYPIPE_OTLP_ENDPOINT": "http://collector:4318/", "PAYPIPE_OTLP_BATCH_SIZE": "10", "PAYPIPE_OTLP_QUEUE_SIZE": "100",
            "PAYPIPE_OTLP_TIMEOUT": "2s", "PAYPIPE_OTLP_SERVICE_NAME": "payments",
        ]) { $1 })).otlp
        #expect(set == OTLPSettings(endpoint: "http://collector:4318/", serviceName: "payments", batchSize: 10, queueSize: 100, timeoutSeconds: 2))
        #expect(set?.tracesURL == "http://collector:4318/v1/traces")
        #expect(OTLPSettings(endpoint: "https://c/v1/traces", serviceName: "").tracesURL == "https://c/v1/traces")
        #expect {
            try WorkerConfiguration(defaultMetricsPort: 9101, environment: EnvironmentReader(base.merging(["PAYPIPE_OTLP_ENDPOINT": "collector:4318"]) { $1 }))
        } throws: { ($0 as? ConfigurationError)?.variable == "PAYPIPE_OTLP_ENDPOINT" }
    }
}
