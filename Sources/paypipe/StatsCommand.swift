import AMQP
import Foundation
import Pipeline
import Postgres

/// `paypipe stats`: queue depths and consumers, payments by status and error code, latency percentiles.
enum StatsCommand: CLICommand {
    static let name = "stats"
    static let summary = "queue depths, consumers, payments by status, latency"
    static let usage = """
        usage: paypipe stats [--job-prefix PREFIX] [--since DURATION] [--json]
          Queues: messages ready and consumers of every stage, retry and dead-letter queue.
          Payments (optionally only jobs whose id starts with PREFIX, or created within DURATION):
          counts by status and error code, by stage, p50/p95/p99 of first receipt → notified (stage done),
          and the last minute's rates of received and finished payments.
        """

    struct Report: Encodable {
        struct Queue: Encodable { let name: String; let messages: UInt32; let consumers: UInt32 }
        struct Count: Encodable { let status: String; let errorCode: String?; let count: Int64 }
        let queues: [Queue]
        let payments: [Count]
        /// Payments per stage; `done` = notified, out of every queue.
        let stages: [String: Int64]
        let latencyMilliseconds: [String: Double]
        /// Per second over the last minute: jobs received, payments finished (notified).
        let recentRates: [String: Double]
    }

    static let syntax = CommandSyntax(.init(flags: ["--json"], options: ["--job-prefix", "--since"]))

    static func run(_ arguments: CommandArguments) -> Int32 {
        do {
            let filter = try filter(arguments)
            let configuration = try WorkerConfiguration(stage: nil)
            let report = Report(
                queues: try queues(configuration),
                payments: try payments(filter),
                stages: try stages(filter),
                latencyMilliseconds: try latency(filter),
                recentRates: try recentRates(filter))
            if arguments.flag("--json") {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(report), as: UTF8.self))
            } else {
                print(render(report))
            }
            return ExitCode.ok
        } catch {
            return OperatorContext.report(error)
        }
    }

    static func queues(_ configuration: WorkerConfiguration) throws -> [Report.Queue] {
        let connection = try AMQPConnection(configuration: try AMQPConfiguration(url: configuration.amqpURL))
        defer { connection.close() }
        return try PipelineTopology.topology(retrySchedule: configuration.retrySchedule).queues.map { queue in
            let (messages, consumers) = try connection.queueDeclarePassive(queue.name)
            return Report.Queue(name: queue.name, messages: messages, consumers: consumers)
        }
    }

    /// The filter shared by the payment queries: optional job-id prefix and creation window.
    typealias Filter = (sql: String, bindings: [any PostgresBindable])

    static func filter(_ arguments: CommandArguments) throws -> Filter {
        let prefix = arguments.value("--job-prefix").map { $0 + "%" }
        let since = try arguments.value("--since").map { text throws(CommandArguments.UsageError) in
            guard let seconds = DurationParser.seconds(text) else { throw .init(description: "--since: not a duration: \(text)") }
            return seconds
        }
        return ("($1::text IS NULL OR job_id LIKE $1) AND ($2::float8 IS NULL OR created_at > now() - make_interval(secs => $2))",
                [prefix, since])
    }

    static func payments(_ filter: Filter) throws -> [Report.Count] {
        let connection = try OperatorContext.database()
        defer { connection.close() }
        let (condition, bindings) = filter
        let rows = try connection.query(
            "SELECT status, error_code, count(*)::bigint AS n FROM payments WHERE \(condition) GROUP BY 1, 2 ORDER BY 1, 2", bindings)
        return try rows.map {
            Report.Count(status: try $0.decode("status", as: String.self), errorCode: try $0.decode("error_code", as: String?.self),
                         count: try $0.decode("n", as: Int64.self))
        }
    }

    static func stages(_ filter: Filter) throws -> [String: Int64] {
        let connection = try OperatorContext.database()
        defer { connection.close() }
        let (condition, bindings) = filter
        var result: [String: Int64] = [:]
        for row in try connection.query("SELECT stage, count(*)::bigint AS n FROM payments WHERE \(condition) GROUP BY 1", bindings) {
            result[try row.decode("stage", as: String.self)] = try row.decode("n", as: Int64.self)
        }
        return result
    }

    static func recentRates(_ filter: Filter) throws -> [String: Double] {
        let connection = try OperatorContext.database()
        defer { connection.close() }
        let (condition, bindings) = filter
        let row = try connection.query(
            """
            SELECT count(*) FILTER (WHERE first_received_at > now() - interval '1 minute')::bigint AS received,
                   count(*) FILTER (WHERE stage = 'done' AND updated_at > now() - interval '1 minute')::bigint AS finished
            FROM payments WHERE \(condition)
            """, bindings)[0]
        return ["receivedPerSecond": Double(try row.decode("received", as: Int64.self)) / 60,
                "finishedPerSecond": Double(try row.decode("finished", as: Int64.self)) / 60]
    }

    /// End-to-end latency of notified payments: first receipt by the decrypt stage → marked done by notify, less the
    /// time a deferred payment waited in `awaiting_amount` for its completion (the merchant's wait, up to 30 days, not
    /// the pipeline's), read from the audit trail for the payments that can have waited (completed, or expired
    /// `prime_expired`).
    static func latency(_ filter: Filter) throws -> [String: Double] {
        let connection = try OperatorContext.database()
        defer { connection.close() }
        let (condition, bindings) = filter
        let row = try connection.query(
            """
            SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50,
                   percentile_cont(0.95) WITHIN GROUP (ORDER BY ms) AS p95,
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99
            FROM (SELECT (extract(epoch FROM p.updated_at - p.first_received_at)
                          - CASE WHEN p.amount_completed_at IS NOT NULL OR p.error_code = 'prime_expired' THEN coalesce(
                                (SELECT extract(epoch FROM max(e.at) FILTER (WHERE e.from_status = 'awaiting_amount')
                                                         - min(e.at) FILTER (WHERE e.to_status = 'awaiting_amount'))
                                 FROM payment_events e WHERE e.payment_id = p.id), 0) ELSE 0 END) * 1000 AS ms
                  FROM payments p WHERE \(condition) AND p.stage = 'done') latencies
            """, bindings)[0]
        var result: [String: Double] = [:]
        for key in ["p50", "p95", "p99"] where !row.isNull(key) { result[key] = try row.decode(key, as: Double.self) }
        return result
    }

    static func render(_ report: Report) -> String {
        let queues = report.queues.filter { $0.messages > 0 || $0.consumers > 0 || !$0.name.contains(".retry.") }
        var lines = [TextTable(header: ["QUEUE", "MESSAGES", "CONSUMERS"], rows: queues.map { [$0.name, String($0.messages), String($0.consumers)] },
                               alignments: [.left, .right, .right]).rendered()]
        lines += ["", TextTable(header: ["STATUS", "ERROR CODE", "COUNT"], rows: report.payments.map { [$0.status, $0.errorCode ?? "-", String($0.count)] },
                                alignments: [.left, .left, .right]).rendered()]
        let stages = report.stages.keys.sorted().map { "\($0) \(report.stages[$0]!)" }.joined(separator: ", ")
        lines += ["", "STAGES: " + (stages.isEmpty ? "no payments" : stages)]
        let latency = ["p50", "p95", "p99"].compactMap { key in report.latencyMilliseconds[key].map { "\(key) \(String(format: "%.1f", $0)) ms" } }
        lines += ["LATENCY (first receipt → notified): " + (latency.isEmpty ? "no notified payments" : latency.joined(separator: ", "))]
        lines += [String(format: "RATES (last minute): %.2f received/s, %.2f finished/s",
                         report.recentRates["receivedPerSecond"] ?? 0, report.recentRates["finishedPerSecond"] ?? 0)]
        return lines.joined(separator: "\n")
    }
}
