import Foundation

/// Tests/Fixtures/bad-input/manifest.json: every bad input PayPipe's ingress must survive and where each lands.
/// It is the oracle of ``Integration/BadInputCorpusTests`` and the source of the table in docs/job-contract.md.
struct BadInputCorpus: Decodable {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/bad-input")
    /// Attributable cases carry the job id `bad-<case id>`.
    static let jobIdPrefix = "bad-"

    enum Landing: String, Decodable {
        /// A copy in `paypipe.decrypt.dlq` with `x-paypipe-error-code` = code; no payment.
        case dlq
        /// The payment ends `failed` with `error_code` = code and is notified (webhook and results event).
        case failed
        /// Not bad at all (a boundary): the payment ends `status`.
        case processed
        /// The payment ends `status`; its webhook delivery is recorded `failed` with `ssrf_refused: …`, no request made.
        case webhookRefused = "webhook_refused"
    }

    struct Expectation: Decodable {
        let landing: Landing
        let code: String
        let status: String?
    }

    struct Case: Decodable {
        let id: String
        let category: String
        /// Static: the raw body, in `cases/`.
        let file: String?
        /// Dynamic: the recipe ``Integration/BadInputCorpusTests`` runs to build the body.
        let build: String?
        /// Webhook cases: the job's `notifyUrl` (`{receiverPort}` substituted; empty = none, the merchant's URL).
        let notifyUrl: String?
        /// AMQP headers published with the case (hostile headers on a good job).
        let headers: [String: HeaderValue]?
        let expect: Expectation
        let note: String

        var jobId: String { BadInputCorpus.jobIdPrefix + id }

        func staticBody() throws -> [UInt8]? {
            try file.map { Array(try Data(contentsOf: BadInputCorpus.directory.appendingPathComponent("cases/" + $0))) }
        }
    }

    /// A header value of the manifest: an integer (signed 64-bit) or a string.
    enum HeaderValue: Decodable {
        case int(Int64)
        case string(String)

        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Int64.self) { self = .int(value) } else { self = .string(try container.decode(String.self)) }
        }
    }

    let cases: [Case]

    static func load() throws -> BadInputCorpus {
        try JSONDecoder().decode(BadInputCorpus.self, from: Data(contentsOf: directory.appendingPathComponent("manifest.json")))
    }

    /// The manifest as the markdown table of docs/job-contract.md (one row per case, in manifest order).
    var markdownTable: String {
        var lines = ["| case | input | lands in | code |", "|---|---|---|---|"]
        for item in cases {
            let landing = switch item.expect.landing {
            case .dlq: "`paypipe.decrypt.dlq`"
            case .failed: "payment `failed`, notified"
            case .processed: "payment `\(item.expect.status ?? "?")` (accepted)"
            case .webhookRefused: "payment `\(item.expect.status ?? "?")`; webhook refused, results event sent"
            }
            let note = item.note.replacingOccurrences(of: "|", with: "\\|")
            lines.append("| `\(item.id)` | \(note) | \(landing) | \(item.expect.code.isEmpty ? "—" : "`\(item.expect.code)`") |")
        }
        return lines.joined(separator: "\n")
    }
}
