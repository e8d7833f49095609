import Foundation
import Pipeline
import Testing

/// Job bodies are read by the project's strict RFC 8259 parser: lenient JSON (a duplicate `amount` that different
/// parsers would read differently, a trailing comma, a byte order mark, trailing bytes, deep nesting) is a
/// malformed job — dead-lettered as `malformed_job` by the decrypt stage — never a payment.
@Suite struct DecryptStrictJSONTests {
    static let job = #"{"jobId":"j1","merchantId":"m1","orderReference":"o","amount":{"value":1,"currency":"GBP"},"applePayToken":{}}"#

    @Test(arguments: [
        #"{"jobId":"j1","merchantId":"m1","amount":{"value":1,"currency":"GBP"},"amount":{"value":9,"currency":"GBP"}}"#,
        #"{"jobId":"j1","merchantId":"m1",}"#,
        "\u{FEFF}" + job,
        job + "x",
        #"{"jobId":"j1","merchantId":"m1","x":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}",
    ])
    func lenientJSONIsAMalformedJob(_ body: String) {
        do {
            _ = try PaymentJob.decode(Array(body.utf8))
            Issue.record("accepted: \(body.prefix(60))")
        } catch {
            guard case .unaddressed = error else { Issue.record("not unaddressed (malformed_job): \(error)"); return }
        }
    }

    @Test func strictJSONIsAJob() throws {
        // The token is empty, so the job is attributable but invalid: it got past the JSON parse.
        do {
            _ = try PaymentJob.decode(Array(Self.job.utf8))
        } catch {
            guard case .invalid = error else { Issue.record("expected an attributable invalid job: \(error)"); return }
        }
    }
}
