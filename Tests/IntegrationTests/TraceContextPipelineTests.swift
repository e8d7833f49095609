import AMQP
import Foundation
import JSON
import PaymentStages
import PayPipeDevTools
import Pipeline
import Postgres
import Testing

extension Integration {
    /// W3C trace context end to end (docs/observability.md): the five real workers on the real broker and database, each
    /// exporting spans as OTLP/HTTP JSON to an independent receiver (Tests/Contract/otlp_receiver.py, which parses them
    /// with the OpenTelemetry project's own `ExportTraceServiceRequest`). Jobs are published with a `traceparent`, without
    /// one and with a malformed one; each must give one trace with a span per stage chained by parent links, the given
    /// trace id kept, and the same trace in the webhook's `traceparent` header and the results message's headers. A
    /// refund carries its trace too. With the collector gone, payments still complete.
    @Suite(.serialized) struct TraceContextPipelineTests {
        static let receiverScript = PipelineProcesses.packageRoot.appendingPathComponent("Tests/Contract/otlp_receiver.py").path
        static let givenTrace = "0af7651916cd43dd8448eb211c80319c"
        static let givenParent = "b7ad6b7169203331"
        static let stages = ["decrypt", "authorize", "submit", "notify"]

        /// The receiver's process, port and the spans it parsed.
        final class Receiver {
            let process: ChildProcess
            let port: Int
            let spansPath: String

            init(directory: URL) throws {
                let portPath = directory.appendingPathComponent("otlp.port").path
                spansPath = directory.appendingPathComponent("otlp-spans.jsonl").path
                process = try ChildProcess.spawn("/usr/bin/env", ["python3", TraceContextPipelineTests.receiverScript, "0", portPath, spansPath],
                                                 logPath: directory.appendingPathComponent("otlp-receiver.log").path)
                var port = 0
                try TestServices.eventually(timeout: 20, "the OTLP receiver listening") {
                    port = Int((try? String(contentsOfFile: portPath, encoding: .utf8)) ?? "") ?? 0
                    return port > 0
                }
                self.port = port
            }

            func stop() {
                process.signal(SIGTERM)
                _ = process.wait()
            }

            /// Every line the receiver wrote: spans, or `{"error": …}` for a request it could not parse.
            func lines() -> [[String: Any]] {
                let text = (try? String(contentsOfFile: spansPath, encoding: .utf8)) ?? ""
                return text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
            }
        }

        /// A results queue bound to everything on `paypipe.results`, declared before any job is published.
        static func bindResults(_ queue: String) throws {
            let connection = try AMQPConnection(configuration: try AMQPConfiguration(url: TestServices.amqpURL))
            defer { connection.close() }
            try connection.declareQueue(AMQPQueue(name: queue, durable: false))
            try connection.bind(AMQPBinding(queue: queue, exchange: PipelineTopology.resultsExchange, routingKey: "#"))
        }

        static func drain(_ queue: String) throws -> [AMQPDelivery] {
            let connection = try AMQPConnection(configuration: try AMQPConfiguration(url: TestServices.amqpURL))
            defer { connection.close() }
            var deliveries: [AMQPDelivery] = []
            while let delivery = try connection.get(queue: queue) {
                try connection.ack(deliveryTag: delivery.deliveryTag)
                deliveries.append(delivery)
            }
            return deliveries
        }

        static func publish(routingKey: String, body: [UInt8], headers: [String: AMQPFieldValue]) throws {
            let publisher = AMQPPublisher(configuration: try AMQPConfiguration(url: TestServices.amqpURL), topology: AMQPTopology())
            defer { publisher.close() }
            var properties = AMQPProperties(contentType: "application/json", persistent: true, timestamp: Date())
            properties.headers = headers
            try publisher.publish(AMQPOutboundMessage(exchange: PipelineTopology.jobsExchange, routingKey: routingKey, body: body,
                                                      properties: properties), timeout: 20)
        }

        static func paymentId(job: String) throws -> String? {
            let database = try TestServices.database()
            defer { database.close() }
            let rows = try database.query("SELECT id::text AS id FROM payments WHERE job_id = $1", [job])
            return rows.first.map { try? $0.decode("id", as: String.self) } ?? nil
        }

        static func outcome(_ span: [String: Any]) -> String { (span["attributes"] as? [String: String])?["paypipe.outcome"] ?? "" }

        /// One job's spans as a chain: decrypt's parent is the publisher's span (or none), each later stage's the previous
        /// one's. A stage may have retried (submit waits for the gateway's answer to settle): each attempt is a child of the
        /// previous stage's span, and the attempt that handed the payment on is the parent of the next stage's. A
        /// duplicate delivery (after a reconnect) may add another span that ended a stage: any of them may be the parent
        /// of the next stage's. A payment handed on from its row instead (submit's reconciling of an answer it lost, a
        /// reconciler's re-drive) continues the context the row kept: decrypt's span, as the re-drive below shows.
        struct Chain {
            /// Per stage, the spans that ended it (any outcome but `retry`).
            var finals: [String: Set<String>] = [:]
            /// Later-stage spans whose parent is neither an earlier stage's final span nor the stored context.
            var orphans: [(stage: String, parent: String?)] = []
            var isComplete: Bool { TraceContextPipelineTests.stages.allSatisfy { finals[$0]?.isEmpty == false } && orphans.isEmpty }
        }

        static func chain(_ jobSpans: [[String: Any]]) -> Chain {
            var chain = Chain()
            for stage in stages {
                chain.finals[stage] = Set(jobSpans.filter { $0["name"] as? String == stage && outcome($0) != "retry" }.compactMap { $0["spanId"] as? String })
            }
            let stored = Set(jobSpans.filter { $0["name"] as? String == "decrypt" }.compactMap { $0["spanId"] as? String })
            for (earlier, later) in zip(stages, stages.dropFirst()) {
                for attempt in jobSpans where attempt["name"] as? String == later {
                    let parent = attempt["parentSpanId"] as? String
                    if !(parent.map { chain.finals[earlier]?.contains($0) == true || stored.contains($0) } ?? false) { chain.orphans.append((later, parent)) }
                }
            }
            return chain
        }

        @Test func everyJobIsOneTraceThroughEveryStageIntoTheWebhookAndTheResults() throws {
            let started = Date()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("paypipe-trace-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let receiver = try Receiver(directory: directory)
            var receiverStopped = false
            defer { if !receiverStopped { receiver.stop() } }
            let tracing = ["PAYPIPE_OTLP_ENDPOINT": "http://127.0.0.1:\(receiver.port)", "PAYPIPE_OTLP_INTERVAL": "100ms",
                           "PAYPIPE_OTLP_TIMEOUT": "2s"]
            var environments = Dictionary(uniqueKeysWithValues: PipelineProcesses.workers.map { ($0, tracing) })
            // Each worker exports on its own schedule, so a collector may receive a stage's span after the next stage's:
            // submit's slower interval makes that the rule here, and the test waits for whole chains, not span names.
            environments["paypipe-submit"]?["PAYPIPE_OTLP_INTERVAL"] = "1s"
            let stack = try PipelineProcesses(processEnvironment: environments)
            defer { stack.stop(); stack.removeFiles() }
            let resultsQueue = "trace-results-\(UUID().uuidString.prefix(8))"
            try Self.bindResults(resultsQueue)

            let sandbox = try SandboxEnvironment.open(directory: stack.sandboxDirectory)
            let prefix = "trace-\(UUID().uuidString.prefix(8))"
            let given = "\(prefix)-given", absent = "\(prefix)-absent", malformed = "\(prefix)-malformed"
            try Self.publish(routingKey: "payment.requested", body: SandboxEnvironment.jobBody(given, token: sandbox.mintJobToken()),
                             headers: ["traceparent": .string("00-\(Self.givenTrace)-\(Self.givenParent)-01"), "tracestate": .string("vendor=abc")])
            try Self.publish(routingKey: "payment.requested", body: SandboxEnvironment.jobBody(absent, token: sandbox.mintJobToken()), headers: [:])
            try Self.publish(routingKey: "payment.requested", body: SandboxEnvironment.jobBody(malformed, token: sandbox.mintJobToken()),
                             headers: ["traceparent": .string("00-\(Self.givenTrace.uppercased())-\(Self.givenParent)-01")])

            // Each job's webhook verified (and so every stage ran), and its spans exported.
            var payments: [String: String] = [:]
            try TestServices.eventually(timeout: 90, "the three payments notified") {
                for job in [given, absent, malformed] { payments[job] = try Self.paymentId(job: job) }
                let notified = Set(stack.verifiedWebhooks().compactMap { $0["paymentId"] as? String })
                return payments.count == 3 && payments.values.allSatisfy(notified.contains)
            }
            func spans(ofJob job: String) -> [[String: Any]] {
                guard let payment = payments[job] else { return [] }
                let ids = receiver.lines().filter {
                    let attributes = $0["attributes"] as? [String: String] ?? [:]
                    return attributes["jobId"] == job || attributes["paymentId"] == payment
                }
                return ids
            }
            do {
                try TestServices.eventually(timeout: 30, "each job's chain of stage spans exported") {
                    [given, absent, malformed].allSatisfy { job in Self.chain(spans(ofJob: job)).isComplete }
                }
            } catch {
                let seen = receiver.lines().map { "\($0["name"] ?? $0["error"] ?? "?") \($0["attributes"] ?? "")" }
                Issue.record("\(error); payments \(payments); the receiver has: \(seen)")
                throw error
            }
            #expect(receiver.lines().filter { $0["error"] != nil }.isEmpty, "the receiver parsed every request: \(receiver.lines().filter { $0["error"] != nil })")

            let webhooks = stack.verifiedWebhooks()
            let results = try Self.drain(resultsQueue)
            var traces: [String: String] = [:]
            for job in [given, absent, malformed] {
                let jobSpans = spans(ofJob: job).filter { Self.stages.contains($0["name"] as? String ?? "") }
                let traceIds = Set(jobSpans.compactMap { $0["traceId"] as? String })
                #expect(traceIds.count == 1, "\(job): one trace, got \(traceIds)")
                let traceId = try #require(traceIds.first)
                traces[job] = traceId
                let chain = Self.chain(jobSpans)
                let finals = chain.finals
                for stage in Self.stages {
                    #expect(finals[stage]?.isEmpty == false, "\(job): a \(stage) span that ended the stage")
                }
                for (later, parent) in chain.orphans {
                    Issue.record("\(job): a \(later) span whose parent \(parent ?? "none") is neither the previous stage's span that handed the payment on nor the stored context")
                }
                for span in jobSpans {
                    let outcome = Self.outcome(span)
                    #expect(span["status"] as? Int == (outcome == "retry" ? 2 : 1), "\(job): \(span["name"]!) \(outcome) has its status")
                    #expect((span["service"] as? String)?.hasPrefix("paypipe-") == true)
                    #expect((span["end"] as? Int ?? 0) >= (span["start"] as? Int ?? 1))
                }
                let decryptParents = Set(jobSpans.filter { $0["name"] as? String == "decrypt" }.map { $0["parentSpanId"] as? String })
                // The webhook and the results message carry the notify span's context.
                let notifySpans = Set((finals["notify"] ?? []).map { "00-\(traceId)-\($0)-01" })
                let payment = try #require(payments[job])
                let hooks = webhooks.filter { $0["paymentId"] as? String == payment }
                #expect(!hooks.isEmpty && hooks.allSatisfy { notifySpans.contains($0["traceparent"] as? String ?? "") },
                        "\(job): webhook traceparent \(hooks.map { $0["traceparent"] ?? "" }), notify spans \(notifySpans)")
                let result = results.filter { $0.properties.headers["paymentId"]?.stringValue == payment }
                #expect(!result.isEmpty && result.allSatisfy { notifySpans.contains($0.properties.headers["traceparent"]?.stringValue ?? "") },
                        "\(job): results traceparent \(result.map { $0.properties.headers["traceparent"] as Any })")
                switch job {
                case given:
                    #expect(traceId == Self.givenTrace, "the job's trace id is kept")
                    #expect(decryptParents == [Self.givenParent], "decrypt's parent is the publisher's span")
                    #expect(result.allSatisfy { $0.properties.headers["tracestate"]?.stringValue == "vendor=abc" }, "tracestate passed on")
                default:
                    #expect(traceId != Self.givenTrace && traceId != String(repeating: "0", count: 32), "\(job): a new trace")
                    #expect(decryptParents == [nil], "\(job): decrypt's span is the root")
                }
            }
            #expect(Set(traces.values).count == 3, "one trace per job")
            // Every log line about the payment carries the trace: each stage's message_handled line.
            for worker in ["paypipe-decrypt", "paypipe-authorize", "paypipe-submit", "paypipe-notify"] {
                let log = try String(contentsOfFile: stack.logPath(worker), encoding: .utf8)
                #expect(log.split(separator: "\n").contains { $0.contains("\"message_handled\"") && $0.contains(given) && $0.contains(Self.givenTrace) },
                        "\(worker) logs message_handled with the trace id")
            }
            print(Self.spanTree(spans(ofJob: given)))

            // Re-driven from the database (its hand-off lost while at notify): the reconciler's re-drive — the stack's own
            // notify reconciler or `paypipe reconcile`, whichever claims it first — continues the payment's stored trace: a
            // new notify span whose parent is decrypt's span (the context the row kept), and the webhook and results
            // message it causes are in the job's trace.
            let givenPayment = try #require(payments[given])
            let decryptSpans = Set(spans(ofJob: given).filter { $0["name"] as? String == "decrypt" }.compactMap { $0["spanId"] as? String })
            let notifiedBefore = Set(spans(ofJob: given).filter { $0["name"] as? String == "notify" }.compactMap { $0["spanId"] as? String })
            let hooksBefore = webhooks.filter { $0["paymentId"] as? String == givenPayment }.count
            let database = try TestServices.database()
            defer { database.close() }
            try database.query("UPDATE payments SET stage = 'notify', updated_at = now() - interval '1 hour', redriven_at = NULL WHERE id = $1::uuid",
                               [givenPayment])
            let reconcile = try ChildProcess.runCapturingOutput(
                PipelineProcesses.packageRoot.appendingPathComponent(".build/debug/paypipe").path, ["reconcile", "--stuck-after", "10m"],
                environment: ["PAYPIPE_ENV": "sandbox", "PAYPIPE_AMQP_URL": TestServices.amqpURL, "PAYPIPE_DATABASE_URL": TestServices.databaseURL])
            #expect(reconcile.status == 0, "paypipe reconcile: \(reconcile.text)")
            var redriven: [[String: Any]] = []
            try TestServices.eventually(timeout: 60, "the re-driven payment's notify span exported and its webhook sent again") {
                redriven = spans(ofJob: given).filter { $0["name"] as? String == "notify" && !notifiedBefore.contains($0["spanId"] as? String ?? "") }
                return !redriven.isEmpty && stack.verifiedWebhooks().filter { $0["paymentId"] as? String == givenPayment }.count > hooksBefore
            }
            #expect(redriven.allSatisfy { $0["traceId"] as? String == Self.givenTrace }, "the re-drive keeps the job's trace: \(redriven)")
            #expect(redriven.allSatisfy { decryptSpans.contains($0["parentSpanId"] as? String ?? "") },
                    "the re-driven notify span is a child of the stored (decrypt's) span: \(redriven.map { $0["parentSpanId"] ?? "-" }), decrypt \(decryptSpans)")
            let redrivenContexts = Set(redriven.compactMap { $0["spanId"] as? String }.map { "00-\(Self.givenTrace)-\($0)-01" })
            let resentHooks = stack.verifiedWebhooks().filter { $0["paymentId"] as? String == givenPayment }.dropFirst(hooksBefore)
            #expect(!resentHooks.isEmpty && resentHooks.allSatisfy { redrivenContexts.contains($0["traceparent"] as? String ?? "") },
                    "the re-sent webhook's traceparent: \(resentHooks.map { $0["traceparent"] ?? "" })")
            var resentResults: [AMQPDelivery] = []
            try TestServices.eventually(timeout: 30, "the re-driven payment's results message") {
                resentResults += try Self.drain(resultsQueue).filter { $0.properties.headers["paymentId"]?.stringValue == givenPayment }
                return !resentResults.isEmpty
            }
            #expect(resentResults.allSatisfy { redrivenContexts.contains($0.properties.headers["traceparent"]?.stringValue ?? "") },
                    "the results message's traceparent: \(resentResults.map { $0.properties.headers["traceparent"] as Any })")
            #expect(resentResults.allSatisfy { $0.properties.headers["tracestate"]?.stringValue == "vendor=abc" }, "the stored tracestate is passed on")
            print(Self.spanTree(spans(ofJob: given)))

            // A refund of the given job's payment, published with its own trace: the operations worker continues it.
            let refundTrace = "1af7651916cd43dd8448eb211c80319d"
            let operationId = "\(prefix)-refund"
            let refund = JSONValue.object([("operationId", .string(operationId)), ("merchantId", .string(SandboxEnvironment.merchantId)),
                                           ("paymentId", .string(try #require(payments[given])))]).serialized()
            try Self.publish(routingKey: "payment.refund.requested", body: refund,
                             headers: ["traceparent": .string("00-\(refundTrace)-\(Self.givenParent)-01")])
            try TestServices.eventually(timeout: 60, "the refund's operations span exported") {
                receiver.lines().contains { $0["name"] as? String == "operations" && ($0["attributes"] as? [String: String])?["operationId"] == operationId }
            }
            let operation = try #require(receiver.lines().first { $0["name"] as? String == "operations" && ($0["attributes"] as? [String: String])?["operationId"] == operationId })
            #expect(operation["traceId"] as? String == refundTrace)
            #expect(operation["parentSpanId"] as? String == Self.givenParent)
            // Its result event (correlation_id = the operation id) carries the same trace.
            var refundResults: [AMQPDelivery] = []
            try TestServices.eventually(timeout: 60, "the refund's result published") {
                refundResults += try Self.drain(resultsQueue).filter { $0.properties.correlationId == operationId }
                return !refundResults.isEmpty
            }
            #expect(refundResults.allSatisfy { $0.properties.headers["traceparent"]?.stringValue?.hasPrefix("00-\(refundTrace)-") == true },
                    "the refund's result continues its trace: \(refundResults.map { $0.properties.headers["traceparent"] as Any })")

            // The collector goes away: payments still complete, the spans are counted as lost.
            receiver.stop()
            receiverStopped = true
            let unobserved = "\(prefix)-collector-down"
            try Self.publish(routingKey: "payment.requested", body: SandboxEnvironment.jobBody(unobserved, token: sandbox.mintJobToken()), headers: [:])
            try TestServices.eventually(timeout: 90, "the payment completes with the collector down") {
                guard let payment = try Self.paymentId(job: unobserved) else { return false }
                return stack.verifiedWebhooks().contains { $0["paymentId"] as? String == payment }
            }
            try TestServices.eventually(timeout: 30, "the lost spans counted") {
                guard let port = stack.metricsPort("paypipe-notify") else { return false }
                return try MetricsScrape.scrape(port: UInt16(port)).samples.contains {
                    $0.name == SpanMetrics.dropped && $0.labels["reason"] == "export_failed" && $0.value > 0
                }
            }
            print("TraceContextPipelineTests took \(Int(Date().timeIntervalSince(started))) s")
        }

        /// The spans of one trace as an indented tree (parent → children), for the report.
        static func spanTree(_ spans: [[String: Any]]) -> String {
            let byParent = Dictionary(grouping: spans) { $0["parentSpanId"] as? String ?? "" }
            let ids = Set(spans.compactMap { $0["spanId"] as? String })
            var lines: [String] = []
            func walk(_ span: [String: Any], depth: Int) {
                let ms = Double((span["end"] as? Int ?? 0) - (span["start"] as? Int ?? 0)) / 1e6
                let attributes = (span["attributes"] as? [String: String] ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                lines.append(String(repeating: "  ", count: depth) + "\(span["name"]!) [\(span["service"]!)] span=\(span["spanId"]!) "
                             + "parent=\(span["parentSpanId"] as? String ?? "-") status=\(span["status"] as? Int == 1 ? "OK" : "ERROR(\(span["statusMessage"] ?? ""))") "
                             + "\(String(format: "%.1f", ms)) ms \(attributes)")
                for child in byParent[span["spanId"] as? String ?? ""] ?? [] { walk(child, depth: depth + 1) }
            }
            let roots = spans.filter { ($0["parentSpanId"] as? String).map { !ids.contains($0) } ?? true }
            lines.insert("trace \(spans.first?["traceId"] ?? "")", at: 0)
            for root in roots { walk(root, depth: 1) }
            return lines.joined(separator: "\n")
        }
    }
}
