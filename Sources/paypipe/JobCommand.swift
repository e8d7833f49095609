import AMQP
import Foundation
import JWT
import PaymentStages
import PayPipeDevTools
import Pipeline

/// `paypipe job publish`: publishes jobs exactly as the contract says (docs/job-contract.md).
enum JobCommand: CLICommand {
    static let name = "job"
    static let summary = "publish a job file or sandbox sample jobs"
    static let usage = """
        usage: paypipe job publish FILE
               paypipe job publish --sample N [--merchant ID] [--prefix PREFIX] [--sandbox-dir DIR] [--all-good] [--rate R] [--card-secrets FILE]
                                  [--order-prefix P] [--pan-offset K]
          Publishes to exchange paypipe.jobs, routing key payment.requested, persistent, content_type
          application/json, message_id = jobId, with publisher confirms. FILE holds one job object or an array.
          --sample N mints N sandbox tokens (sandbox PKI in DIR, default var/sandbox) in a mix of outcomes:
          mostly valid, plus per ten jobs one RSA_v1, one amount mismatch, one invalid job and one replayed
          token; from 20 jobs on, also one unknown merchant and one malformed message (dead-lettered).
        \(SandboxEnvironment.sampleJobsUsage)
          --all-good makes every sample a valid EC_v1 job the simulator authorises (benchmark load).
          Jobs are published in confirm windows of 500, as fast as the broker confirms; --rate R instead offers
          R jobs per second, in windows of R/100 every 10 ms (all tokens are minted before the first publish).
          Prints one JSON line per job: {"jobId", "kind", "publishedAtMs"} (Unix milliseconds its window was sent).
          --card-secrets FILE writes the sample tokens' PANs and cryptograms (JSON lines {"jobId", "pan",
          "cryptogram"}, mode 0600) for card-data hygiene checks (scripts/hygiene); never use it elsewhere.
          --order-prefix P gives sample n the order reference order-P-n (retries of an earlier wave's orders
          under new job ids); --pan-offset K shifts the sample PANs by K (each wave its own cards).
        """

    static let syntax = CommandSyntax(.init(
        ["publish"], operands: ["[FILE]"], flags: ["--all-good"],
        options: ["--sample", "--merchant", "--prefix", "--sandbox-dir", "--rate", "--card-secrets", "--order-prefix", "--pan-offset"]))

    static func run(_ arguments: CommandArguments) -> Int32 {
        guard (arguments.positionals.count == 2) != (arguments.value("--sample") != nil) else {
            return report(usage: .init(description: "give FILE or --sample N (one of them)"))
        }
        do {
            let rate = try arguments.value("--rate").map { text throws(CommandArguments.UsageError) in
                guard let rate = Double(text), rate > 0 else { throw .init(description: "--rate needs a positive number of jobs per second") }
                return rate
            }
            let panOffset = try arguments.value("--pan-offset").map { text throws(CommandArguments.UsageError) in
                guard let offset = Int(text), (0...1_000_000_000).contains(offset) else { throw .init(description: "--pan-offset needs a non-negative number") }
                return offset
            } ?? 0
            var jobs: [(jobId: String, kind: String, body: [UInt8])] = []
            if let count = arguments.value("--sample") {
                guard let count = Int(count), count > 0 else { throw CommandArguments.UsageError(description: "--sample needs a positive count") }
                let sandbox = try SandboxEnvironment.open(directory: arguments.value("--sandbox-dir") ?? OperatorContext.sandboxDirectory)
                let factory = SampleJobFactory(environment: sandbox, merchantId: arguments.value("--merchant") ?? SandboxEnvironment.merchantId)
                let prefix = arguments.value("--prefix") ?? "sample-\(Int(Date().timeIntervalSince1970))"
                let samples = try factory.makeJobs(count: count, prefix: prefix, allValid: arguments.flag("--all-good"),
                                                   orderPrefix: arguments.value("--order-prefix"), panOffset: panOffset)
                jobs = samples.map { ($0.jobId, $0.kind.rawValue, $0.body) }
                if let path = arguments.value("--card-secrets") { try writeCardSecrets(samples, to: path) }
            } else {
                let path = try arguments.positional(1, "FILE (or --sample N)")
                guard let data = FileManager.default.contents(atPath: path),
                      let parsed = try? JSONSerialization.jsonObject(with: data) else {
                    printError("paypipe: \(path) is not readable JSON")
                    return ExitCode.dataError
                }
                let objects = (parsed as? [Any]) ?? [parsed]
                jobs = try objects.map { object in
                    let body = Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
                    return (((object as? [String: Any])?["jobId"] as? String) ?? "", "file", body)
                }
            }
            let configuration = try WorkerConfiguration(stage: nil)
            let publisher = try OperatorContext.publisher(configuration)
            defer { publisher.close() }
            let messages = jobs.map { job in
                var properties = AMQPProperties()
                properties.contentType = "application/json"
                properties.messageId = job.jobId.isEmpty ? nil : job.jobId
                properties.persistent = true
                properties.timestamp = Date()
                return AMQPOutboundMessage(
                    exchange: PipelineTopology.jobsExchange, routingKey: PipelineTopology.jobRoutingKey,
                    body: job.body, properties: properties, mandatory: true)
            }
            let publishedAt = try publish(messages, rate: rate, with: publisher)
            for (index, job) in jobs.enumerated() {
                print("{\"jobId\":\"\(job.jobId)\",\"kind\":\"\(job.kind)\",\"publishedAtMs\":\(publishedAt[index])}")
            }
            return ExitCode.ok
        } catch {
            return OperatorContext.report(error)
        }
    }

    /// The sample tokens' card secrets as JSON lines, in a file created with mode 0600 (never widened by a chmod
    /// after the fact, so there is no moment at which another user could open it).
    static func writeCardSecrets(_ samples: [SampleJobFactory.Sample], to path: String) throws {
        var text = ""
        for sample in samples {
            guard let secrets = sample.cardSecrets else { continue }
            let line: JSONValue = ["jobId": .string(sample.jobId), "pan": .string(secrets.pan), "cryptogram": .string(secrets.cryptogram)]
            text += String(decoding: line.serialized(), as: UTF8.self) + "\n"
        }
        try? FileManager.default.removeItem(atPath: path)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw CommandArguments.UsageError(description: "cannot create --card-secrets file \(path)") }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
    }

    /// Publishes with confirms: windows of 500 back to back, or (with `rate`) windows of `rate/100` jobs paced every
    /// 10 ms so the offered load stays even. Returns each message's send time in Unix milliseconds.
    static func publish(_ messages: [AMQPOutboundMessage], rate: Double?, with publisher: AMQPPublisher) throws -> [Int64] {
        var publishedAt: [Int64] = []
        publishedAt.reserveCapacity(messages.count)
        let window = rate.map { max(1, Int(($0 / 100).rounded())) } ?? 500
        let start = DispatchTime.now().uptimeNanoseconds
        for first in stride(from: 0, to: messages.count, by: window) {
            if let rate {
                let due = start + UInt64(Double(first) / rate * 1e9)
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { Thread.sleep(forTimeInterval: Double(due - now) / 1e9) }
            }
            let slice = Array(messages[first..<min(first + window, messages.count)])
            let sent = Int64((Date().timeIntervalSince1970 * 1000).rounded())
            try publishAtLeastOnce(slice, with: publisher)
            publishedAt.append(contentsOf: repeatElement(sent, count: slice.count))
        }
        return publishedAt
    }

    /// A broker that loses a queue's leader (a cluster node) nacks what it had not stored, and a confirm that does not
    /// come in time may or may not have been stored: the same bytes go out again, as a backend must (at-least-once;
    /// decrypt recognises a repeated job by its id and content). Other failures (unroutable, closed) are final.
    static func publishAtLeastOnce(_ slice: [AMQPOutboundMessage], with publisher: AMQPPublisher, attempts: Int = 8) throws {
        var attempt = 1
        while true {
            do {
                try publisher.publish(slice, timeout: 60)
                return
            } catch {
                guard error == .nacked || error == .timeout, attempt < attempts else { throw error }
                if error == .nacked { publisher.reconnect() }  // a nacking channel does not heal (AMQPPublisher.reconnect)
                Thread.sleep(forTimeInterval: AMQPBackoff(baseSeconds: 0.5, capSeconds: 5).delay(forAttempt: attempt))
                attempt += 1
            }
        }
    }
}
